package storetest

import (
	"testing"

	"github.com/myriarch/myriarch/server/store"
)

// testAuditConcurrentHandles: six handles on one database (six myriarchd
// instances), each appending from two goroutines at once, write one
// chain: no fork (two records after one), no gap, every append stored
// as it was returned.
func testAuditConcurrentHandles(t *testing.T, h *handle) {
	const handles, writers, each = 6, 12, 25
	dbs := []store.Store{h.db}
	for range handles - 1 {
		db := h.open(t)
		defer db.Close()
		dbs = append(dbs, db)
	}
	appended := make([][]store.AuditRecord, writers)
	concurrently(t, writers, func(w int) error {
		for i := range each {
			r, err := dbs[w%handles].AppendAudit(ctx, seal(auditRecord(w*1000+i)))
			if err != nil {
				return err
			}
			appended[w] = append(appended[w], r...)
		}
		return nil
	})
	anchor, all := readAllAudit(t, dbs[1])
	if len(all) != writers*each {
		t.Fatalf("%d records, want %d", len(all), writers*each)
	}
	checkChain(t, anchor, all)
	for w := range appended {
		for _, r := range appended[w] {
			if !sameAuditRecord(all[r.ID-1], r) {
				t.Fatalf("writer %d's record %d stored as %+v, appended as %+v", w, r.ID, all[r.ID-1], r)
			}
		}
	}
}
