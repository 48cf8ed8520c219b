package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// cutSeal seals the record of a cut, which names the cut.
func cutSeal(c store.AuditCut) store.AuditSeal {
	return seal(store.AuditRecord{Time: auditBase.Add(time.Hour), Actor: "myriarchd", Via: "estate", Action: "audit.cut",
		Outcome: "ok", Detail: fmt.Sprintf("cut %d up to %d: %s", c.Records, c.UpTo, c.Hash)})
}

// testAuditCut: a cut removes the oldest records older than its time, a
// prefix of the trail (stopping at the first newer record, even when
// older ones follow it), at most max of them; it moves the anchor to the
// last record removed and appends its own record after the trail's last.
// Nothing to cut changes nothing. Cutting everything leaves the cut's
// record, following the anchor.
func testAuditCut(t *testing.T, h *handle) {
	recs := appendAudit(t, h.db, 0, 10) // ids 1..10 at base+0s..9s
	skewed := auditRecord(0)            // id 11, as old as the first
	recs = append(recs, appendOne(t, h.db, seal(skewed)))
	at := func(i int) time.Time { return auditBase.Add(time.Duration(i) * time.Second) }

	cut, err := h.db.CutAudit(ctx, auditBase, 100, cutSeal)
	must(t, err)
	if cut != (store.AuditCut{}) {
		t.Fatalf("a cut before the oldest record cut %+v", cut)
	}
	if anchor, all := readAllAudit(t, h.db); anchor.ID != 0 || len(all) != 11 {
		t.Fatalf("after cutting nothing: anchor %+v, %d records", anchor, len(all))
	}

	steps := []struct {
		name   string
		before time.Time
		max    int
		want   store.AuditCut
		first  int64 // the first record left
		last   int64 // the cut's record
	}{
		{"at most max", at(5), 3, store.AuditCut{Records: 3, UpTo: 3, Hash: recs[2].Hash}, 4, 12},
		{"up to the first newer record", at(5), 100, store.AuditCut{Records: 2, UpTo: 5, Hash: recs[4].Hash}, 6, 13},
	}
	for _, s := range steps {
		cut, err := h.db.CutAudit(ctx, s.before, s.max, cutSeal)
		must(t, err)
		if cut != s.want {
			t.Fatalf("%s: cut %+v, want %+v", s.name, cut, s.want)
		}
		anchor, all := readAllAudit(t, h.db)
		if anchor != (store.AuditHead{ID: s.want.UpTo, Hash: s.want.Hash}) {
			t.Fatalf("%s: anchor %+v, want the last record cut", s.name, anchor)
		}
		checkChain(t, anchor, all)
		if all[0].ID != s.first || all[len(all)-1].ID != s.last || all[len(all)-1].Action != "audit.cut" ||
			all[len(all)-1].Detail != fmt.Sprintf("cut %d up to %d: %s", cut.Records, cut.UpTo, cut.Hash) {
			t.Fatalf("%s: records %d to %d, the last %+v", s.name, all[0].ID, all[len(all)-1].ID, all[len(all)-1])
		}
	}

	db := h.restart()
	cut, err = db.CutAudit(ctx, auditBase.Add(1000*time.Hour), 100, cutSeal)
	must(t, err)
	anchor, all := readAllAudit(t, db)
	if cut.Records != 8 || cut.UpTo != 13 || anchor.ID != 13 || anchor.Hash != cut.Hash {
		t.Fatalf("cutting everything: cut %+v, anchor %+v", cut, anchor)
	}
	if len(all) != 1 || all[0].ID != 14 || all[0].Prev != cut.Hash {
		t.Fatalf("cutting everything left %+v, want the cut's record alone", all)
	}
	next := appendAudit(t, db, 20, 21)[0]
	if next.ID != 15 || next.Prev != all[0].Hash {
		t.Fatalf("the record after a cut: %+v", next)
	}
}
