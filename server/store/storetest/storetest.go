// Package storetest is the contract of store.Store, one suite that every
// backend runs: each method, what survives a restart, the per-agent event
// bound, concurrent writers (in one process and from two handles on the
// same database, as two myriarchd instances), the load path (4 000 agents;
// 100 000 with MYRIARCH_LOAD_AGENTS), and the audit trail (one chain from six handles at once). A backend's test calls Run with a way to make an empty database.
package storetest

import (
	"context"
	"testing"

	"github.com/myriarch/myriarch/server/store"
)

// NewDB makes an empty database for t and returns how to open it. Each
// call of open opens that same database again (after the caller closed
// the previous handle: a restart), or a second handle beside the first.
type NewDB func(t *testing.T) (open func(t *testing.T) store.Store)

// Run runs the contract against the backend newDB makes.
func Run(t *testing.T, newDB NewDB) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h *handle)
	}{
		{"Tokens", testTokens},
		{"Users", testUsers},
		{"LastAdminTwoHandles", testLastAdminTwoHandles},
		{"APIKeys", testAPIKeys},
		{"Sessions", testSessions},
		{"AgentsRoundTrip", testAgentsRoundTrip},
		{"LastSeenOnlyMovesForward", testLastSeen},
		{"Delete", testDelete},
		{"StaleUpsertIgnored", testStaleUpsertIgnored},
		{"RowsOrderedByChange", testRowsOrderedByChange},
		{"EventsOnlyRow", testEventsOnlyRow},
		{"EventsBounded", testEventsBounded},
		{"LoadKeepsNewestEvents", testLoadKeepsNewestEvents},
		{"EventsExact", testEventsExact},
		{"State", testState},
		{"Configs", testConfigs},
		{"Offers", testOffers},
		{"Reports", testReports},
		{"Relayed", testRelayed},
		{"Connections", testConnections},
		{"ConcurrentWriters", testConcurrentWriters},
		{"TwoHandles", testTwoHandles},
		{"LoadPath", testLoadPath},
		{"AuditChain", testAuditChain},
		{"AuditSealRefused", testAuditSealRefused},
		{"AuditBatch", testAuditBatch},
		{"AuditList", testAuditList},
		{"AuditCut", testAuditCut},
		{"AuditConcurrentHandles", testAuditConcurrentHandles},
		{"Deliveries", testDeliveries},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			open := newDB(t)
			h := &handle{t: t, open: open}
			h.db = open(t)
			t.Cleanup(func() {
				if h.db != nil {
					h.db.Close()
				}
			})
			c.fn(t, h)
		})
	}
}

// handle is the store under test and how to restart it.
type handle struct {
	t    *testing.T
	open func(t *testing.T) store.Store
	db   store.Store
}

// restart closes the store and opens the same database again.
func (h *handle) restart() store.Store {
	h.t.Helper()
	if err := h.db.Close(); err != nil {
		h.t.Fatalf("close: %v", err)
	}
	h.db = nil
	h.db = h.open(h.t)
	return h.db
}

var ctx = context.Background()

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// beforeAndAfterRestart runs check on the open store, then again after a restart.
func (h *handle) beforeAndAfterRestart(check func(db store.Store)) {
	check(h.db)
	check(h.restart())
}
