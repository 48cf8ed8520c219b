package audit_test

import (
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server/audit"
)

// Verification names the first record that does not follow, whatever was
// done to the rows directly in the database (with the triggers that keep
// them append-only dropped first, as their owner could): a field
// changed, a record deleted from the middle, a record inserted in the
// middle with a hash made to fit, one appended with a wrong hash, the
// oldest deleted without a cut, and with a forged anchor.
func TestVerifyFindsTampering(t *testing.T) {
	cases := []struct {
		name     string
		tamper   func(db *raw, recs []audit.Record)
		firstBad int64
		proven   int64
		reason   string
	}{
		{"a field changed", func(db *raw, _ []audit.Record) {
			db.run(`UPDATE audit SET detail = 'nothing happened' WHERE id = 5`)
		}, 5, 4, "hash is not the hash of its content"},
		{"the time changed by a nanosecond", func(db *raw, recs []audit.Record) {
			db.run(`UPDATE audit SET time = time + 1 WHERE id = 7`)
		}, 7, 6, "hash is not the hash of its content"},
		{"a middle record deleted", func(db *raw, _ []audit.Record) {
			db.run(`DELETE FROM audit WHERE id = 5`)
		}, 6, 4, "record 5 is missing"},
		{"a record inserted in the middle", func(db *raw, recs []audit.Record) {
			db.run(`UPDATE audit SET id = id + 1000 WHERE id >= 5`)
			db.run(`UPDATE audit SET id = id - 999 WHERE id >= 1000`)
			forged := sample(99)
			forged.ID, forged.Time, forged.Prev = 5, recs[3].Time, recs[3].Hash
			forged.Hash = forged.HashAfter(forged.Prev)
			db.insert(forged)
		}, 6, 5, "prev is not the hash of record 5"},
		{"a record appended with a wrong hash", func(db *raw, recs []audit.Record) {
			forged := sample(99)
			forged.ID, forged.Time, forged.Prev = 11, recs[9].Time, recs[9].Hash
			forged.Hash = recs[9].Hash
			db.insert(forged)
		}, 11, 10, "hash is not the hash of its content"},
		{"a record's prev changed", func(db *raw, recs []audit.Record) {
			db.run(`UPDATE audit SET prev = '` + recs[1].Hash + `' WHERE id = 4`)
		}, 4, 3, "prev is not the hash of record 3"},
		{"the oldest deleted without a cut", func(db *raw, _ []audit.Record) {
			db.run(`DELETE FROM audit WHERE id <= 3`)
		}, 4, 0, "no cut's record says records 1 to 3 were cut"},
		{"the oldest deleted with a forged anchor", func(db *raw, recs []audit.Record) {
			db.run(`INSERT INTO audit_anchor(one, up_to, hash) VALUES(1, 3, '` + recs[2].Hash + `')`)
			db.run(`DELETE FROM audit WHERE id <= 3`)
		}, 4, 0, "no audit.cut record says so"},
	}
	for _, b := range backends {
		for _, c := range cases {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				st, db := b.open(t)
				tr := audit.New(audit.Options{Store: st, Now: newClock().Now})
				recs := appendN(t, tr, 0, 10)
				if v := verify(t, tr); v != (audit.Verification{OK: true, Records: 10}) {
					t.Fatalf("before: %+v", v)
				}
				for _, q := range db.unguard {
					db.run(q)
				}
				c.tamper(db, recs)
				v := verify(t, tr)
				if v.OK || v.FirstBad != c.firstBad || v.Records != c.proven || !strings.Contains(v.Reason, c.reason) {
					t.Fatalf("after: %+v, want record %d first bad after %d proven, for %q", v, c.firstBad, c.proven, c.reason)
				}
			})
		}
	}
}

// After cuts, verification starts from the anchor the latest cut's record
// names and still proves the rest: a change after the cut is found, and
// so is a cut's record changed, or an anchor moved without one.
func TestVerifyAfterCuts(t *testing.T) {
	cases := []struct {
		name     string
		tamper   func(db *raw)
		firstBad int64
		reason   string
	}{
		{"nothing", func(*raw) {}, 0, ""},
		{"a kept record changed", func(db *raw) { db.run(`UPDATE audit SET actor = 'nobody' WHERE id = 9`) }, 9, "hash is not"},
		{"the last cut's record changed", func(db *raw) {
			db.run(`UPDATE audit SET detail = replace(detail, 'up to id 7', 'up to id 8') WHERE id = 12`)
		}, 12, "hash is not"},
		{"a kept record deleted after the anchor", func(db *raw) {
			db.run(`DELETE FROM audit WHERE id = 8`)
		}, 9, "the trail starts at id 9, but its anchor is id 7: record 8 is missing"},
	}
	for _, b := range backends {
		for _, c := range cases {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				st, db := b.open(t)
				clk := newClock()
				tr := audit.New(audit.Options{Store: st, Now: clk.Now})
				tr.SetCutChunk(4)
				recs := appendN(t, tr, 0, 10) // ids 1..10, a second apart
				cuts, err := tr.Cut(ctx, recs[7].Time)
				if err != nil {
					t.Fatal(err)
				}
				// Records 1 to 7 are older: two cuts, 4 then 3, ids 11 and 12.
				if cuts != (audit.Cuts{Cuts: 2, Records: 7, UpTo: 7}) {
					t.Fatalf("cuts %+v", cuts)
				}
				appendN(t, tr, 10, 1) // id 13
				p, err := tr.List(ctx, audit.Query{Action: audit.ActionCut})
				if err != nil || len(p.Records) != 2 || p.Records[0].ID != 12 ||
					!strings.HasPrefix(p.Records[0].Detail, "cut 3 records up to id 7; last cut hash "+recs[6].Hash) {
					t.Fatalf("the cuts' records: %+v %v", p.Records, err)
				}
				if v := verify(t, tr); v != (audit.Verification{OK: true, Records: 6}) {
					t.Fatalf("after the cuts: %+v", v)
				}
				for _, q := range db.unguard {
					db.run(q)
				}
				c.tamper(db)
				v := verify(t, tr)
				if c.firstBad == 0 {
					if !v.OK {
						t.Fatalf("untouched: %+v", v)
					}
					return
				}
				if v.OK || v.FirstBad != c.firstBad || !strings.Contains(v.Reason, c.reason) {
					t.Fatalf("after: %+v, want record %d first bad, for %q", v, c.firstBad, c.reason)
				}
			})
		}
	}
}
