package storetest

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// matchesAudit is what ListAudit's conditions select, in Go.
func matchesAudit(r store.AuditRecord, q store.AuditQuery) bool {
	for _, f := range [][2]string{{q.Actor, r.Actor}, {q.Action, r.Action}, {q.Target, r.Target}, {q.Outcome, r.Outcome}} {
		if f[0] != "" && f[0] != f[1] {
			return false
		}
	}
	return (q.Since.IsZero() || !r.Time.Before(q.Since)) && (q.Until.IsZero() || r.Time.Before(q.Until))
}

// newestFirst orders records as the listing does: by time, then id, newest first.
func newestFirst(a, b store.AuditRecord) int {
	return cmp.Or(b.Time.Compare(a.Time), cmp.Compare(b.ID, a.ID))
}

func auditIDs(recs []store.AuditRecord) []int64 {
	out := []int64{}
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

// testAuditList: every filter, alone and together, selects what it says,
// newest first (records of the same time by id), and a cursor pages
// through the same records a page at a time.
func testAuditList(t *testing.T, h *handle) {
	all := appendAudit(t, h.db, 0, 12)
	// Three more at the time of record 5: ties are ordered by id.
	for range 3 {
		r := auditRecord(5)
		r.Actor = "user-tie"
		all = append(all, appendOne(t, h.db, seal(r)))
	}
	at := func(i int) time.Time { return auditBase.Add(time.Duration(i) * time.Second) }
	queries := []struct {
		name string
		q    store.AuditQuery
	}{
		{"everything", store.AuditQuery{}},
		{"actor", store.AuditQuery{Actor: "user-1"}},
		{"action", store.AuditQuery{Action: "action.0"}},
		{"target", store.AuditQuery{Target: "target-2"}},
		{"outcome", store.AuditQuery{Outcome: "denied"}},
		{"since", store.AuditQuery{Since: at(5)}},
		{"until", store.AuditQuery{Until: at(5)}},
		{"since and until", store.AuditQuery{Since: at(3), Until: at(8)}},
		{"since a nanosecond later", store.AuditQuery{Since: at(5).Add(time.Nanosecond)}},
		{"actor and outcome", store.AuditQuery{Actor: "user-0", Outcome: "ok"}},
		{"ties", store.AuditQuery{Actor: "user-tie"}},
		{"nothing matches", store.AuditQuery{Actor: "nobody"}},
	}
	h.beforeAndAfterRestart(func(db store.Store) {
		for _, c := range queries {
			var want []store.AuditRecord
			for _, r := range all {
				if matchesAudit(r, c.q) {
					want = append(want, r)
				}
			}
			slices.SortFunc(want, newestFirst)
			q := c.q
			q.Limit = 100
			got, err := db.ListAudit(ctx, q)
			must(t, err)
			if !slices.Equal(auditIDs(got), auditIDs(want)) {
				t.Errorf("%s: ids %v, want %v", c.name, auditIDs(got), auditIDs(want))
			}
			// Two at a time, each page after the last record of the one before.
			var paged []store.AuditRecord
			q.Limit = 2
			for {
				page, err := db.ListAudit(ctx, q)
				must(t, err)
				paged = append(paged, page...)
				if len(page) < 2 {
					break
				}
				last := page[len(page)-1]
				q.After = &store.AuditPosition{Time: last.Time, ID: last.ID}
			}
			if !slices.Equal(auditIDs(paged), auditIDs(want)) {
				t.Errorf("%s in pages of 2: ids %v, want %v", c.name, auditIDs(paged), auditIDs(want))
			}
		}
	})
}
