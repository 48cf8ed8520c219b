package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// auditBase is the time of the contract's first audit record.
var auditBase = time.Unix(1700000000, 123456789).UTC()

// auditRecord is record i of the contract: fields that differ per record,
// at auditBase plus i seconds.
func auditRecord(i int) store.AuditRecord {
	return store.AuditRecord{Time: auditBase.Add(time.Duration(i) * time.Second), Actor: fmt.Sprintf("user-%d", i%3),
		Role: "admin", Via: "api", Action: fmt.Sprintf("action.%d", i%2), Target: fmt.Sprintf("target-%d", i%4),
		Source: "192.0.2.1:5000", RequestID: fmt.Sprintf("req-%d", i), Outcome: []string{"ok", "denied", "error"}[(i/2)%3],
		Detail: fmt.Sprintf("détail %d \"quoted\"\n", i)}
}

// seal seals r after head with a hash of its own (the contract checks
// that a store keeps what it is given, not how package audit hashes).
func seal(r store.AuditRecord) store.AuditSeal {
	return func(h store.AuditHead) (store.AuditRecord, error) {
		r.ID, r.Prev = h.ID+1, h.Hash
		sum := sha256.Sum256([]byte(fmt.Sprint(r.Prev, r.ID, r.Time.UnixNano(), r.Actor, r.Action, r.Detail)))
		r.Hash = hex.EncodeToString(sum[:])
		return r, nil
	}
}

// appendAudit appends records from..to-1 and returns them as stored.
func appendAudit(t *testing.T, db store.Store, from, to int) []store.AuditRecord {
	t.Helper()
	var out []store.AuditRecord
	for i := from; i < to; i++ {
		out = append(out, appendOne(t, db, seal(auditRecord(i))))
	}
	return out
}

// appendOne appends the record s seals.
func appendOne(t *testing.T, db store.Store, s store.AuditSeal) store.AuditRecord {
	t.Helper()
	recs, err := db.AppendAudit(ctx, s)
	must(t, err)
	if len(recs) != 1 {
		t.Fatalf("one seal appended %d records", len(recs))
	}
	return recs[0]
}

// readAllAudit reads the anchor and every record, in batches of 3.
func readAllAudit(t *testing.T, db store.Store) (store.AuditHead, []store.AuditRecord) {
	t.Helper()
	var all []store.AuditRecord
	var first store.AuditHead
	after := int64(0)
	for i := 0; ; i++ {
		anchor, recs, err := db.ReadAudit(ctx, after, 3)
		must(t, err)
		if i == 0 {
			first = anchor
		} else if anchor != first {
			t.Fatalf("the anchor changed from %+v to %+v between batches", first, anchor)
		}
		all = append(all, recs...)
		if len(recs) < 3 {
			return first, all
		}
		after = recs[len(recs)-1].ID
	}
}

// checkChain: dense ids from the anchor on, each prev the hash before it.
func checkChain(t *testing.T, anchor store.AuditHead, recs []store.AuditRecord) {
	t.Helper()
	prev := anchor
	for _, r := range recs {
		if r.ID != prev.ID+1 || r.Prev != prev.Hash {
			t.Fatalf("record %d (prev %.8s) follows record %d (hash %.8s)", r.ID, r.Prev, prev.ID, prev.Hash)
		}
		prev = store.AuditHead{ID: r.ID, Hash: r.Hash}
	}
}

// testAuditChain: appends get dense ids from 1, each sealed after the one
// before, and are read back exactly, in id order, after a restart too.
func testAuditChain(t *testing.T, h *handle) {
	anchor, recs := readAllAudit(t, h.db)
	if anchor != (store.AuditHead{Hash: store.AuditGenesis}) || len(recs) != 0 {
		t.Fatalf("a new trail: anchor %+v, %d records", anchor, len(recs))
	}
	want := appendAudit(t, h.db, 0, 7)
	if want[0].ID != 1 || want[0].Prev != store.AuditGenesis {
		t.Fatalf("first record %d with prev %s", want[0].ID, want[0].Prev)
	}
	h.beforeAndAfterRestart(func(db store.Store) {
		anchor, got := readAllAudit(t, db)
		if anchor.ID != 0 || len(got) != len(want) {
			t.Fatalf("anchor %+v, %d records, want none and %d", anchor, len(got), len(want))
		}
		for i := range want {
			if !sameAuditRecord(got[i], want[i]) {
				t.Errorf("record %d read back as %+v, want %+v", i+1, got[i], want[i])
			}
		}
		checkChain(t, anchor, got)
		_, some, err := db.ReadAudit(ctx, 2, 3)
		must(t, err)
		if len(some) != 3 || some[0].ID != 3 || some[2].ID != 5 {
			t.Fatalf("ReadAudit after 2, 3 records: %+v, want records 3 to 5", some)
		}
	})
}

func sameAuditRecord(a, b store.AuditRecord) bool {
	at, bt := a.Time, b.Time
	a.Time, b.Time = time.Time{}, time.Time{}
	return a == b && at.Equal(bt) && at.Location() == time.UTC
}

// testAuditSealRefused: a seal's error or a record that does not follow
// the head stores nothing and leaves no gap.
func testAuditSealRefused(t *testing.T, h *handle) {
	appendAudit(t, h.db, 0, 2)
	boom := errors.New("boom")
	bad := []struct {
		name string
		seal store.AuditSeal
		want error
	}{
		{"seal fails", func(store.AuditHead) (store.AuditRecord, error) { return store.AuditRecord{}, boom }, boom},
		{"id skips one", func(hd store.AuditHead) (store.AuditRecord, error) {
			r, _ := seal(auditRecord(9))(hd)
			r.ID++
			return r, nil
		}, store.ErrAuditSeal},
		{"id repeats", func(hd store.AuditHead) (store.AuditRecord, error) {
			r, _ := seal(auditRecord(9))(hd)
			r.ID--
			return r, nil
		}, store.ErrAuditSeal},
		{"prev of another record", func(hd store.AuditHead) (store.AuditRecord, error) {
			r, _ := seal(auditRecord(9))(hd)
			r.Prev = store.AuditGenesis
			return r, nil
		}, store.ErrAuditSeal},
	}
	for _, b := range bad {
		if _, err := h.db.AppendAudit(ctx, b.seal); !errors.Is(err, b.want) {
			t.Errorf("%s: err = %v, want %v", b.name, err, b.want)
		}
	}
	// In a batch, one refused seal stores none of the batch.
	for _, b := range bad {
		if _, err := h.db.AppendAudit(ctx, seal(auditRecord(7)), seal(auditRecord(8)), b.seal, seal(auditRecord(9))); !errors.Is(err, b.want) {
			t.Errorf("%s in a batch: err = %v, want %v", b.name, err, b.want)
		}
	}
	r := appendAudit(t, h.db, 2, 3)[0]
	if r.ID != 3 {
		t.Fatalf("the append after the refused ones got id %d, want 3", r.ID)
	}
	anchor, all := readAllAudit(t, h.db)
	if len(all) != 3 {
		t.Fatalf("%d records stored, want 3", len(all))
	}
	checkChain(t, anchor, all)
}

// testAuditBatch: records appended together each follow the one before,
// in the order of their seals, and read back as returned.
func testAuditBatch(t *testing.T, h *handle) {
	appendAudit(t, h.db, 0, 2)
	var seals []store.AuditSeal
	for i := range 5 {
		seals = append(seals, seal(auditRecord(10+i)))
	}
	recs, err := h.db.AppendAudit(ctx, seals...)
	must(t, err)
	if len(recs) != 5 || recs[0].ID != 3 || recs[4].ID != 7 || recs[0].RequestID != "req-10" || recs[4].RequestID != "req-14" {
		t.Fatalf("a batch of 5 appended %+v", recs)
	}
	none, err := h.db.AppendAudit(ctx)
	if err != nil || len(none) != 0 {
		t.Fatalf("an empty batch: %v %v", none, err)
	}
	anchor, all := readAllAudit(t, h.db)
	checkChain(t, anchor, all)
	for i, r := range recs {
		if !sameAuditRecord(all[2+i], r) {
			t.Fatalf("record %d stored as %+v, returned as %+v", r.ID, all[2+i], r)
		}
	}
}
