package opampsrv

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
)

// A WebSocket here whose agent's row names a newer connection to another
// instance is closed with CloseReplaced, recorded and counted: when the
// row is merged while it is open, and when it is merged between the
// registry counting the connection and the connection being found (it is
// then closed as soon as it is).
func TestReplacedOnAnotherInstance(t *testing.T) {
	for _, tc := range []struct {
		name        string
		duringHello bool // the row is merged while the registry records the first message
	}{
		{"while open", false},
		{"before it could be found", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var replaced atomic.Int32
			reg, addr := newRegistryEndpoint(t, slog.New(slog.DiscardHandler), Metrics{Replaced: func() { replaced.Add(1) }}, Options{},
				registry.Options{Instance: "here"})
			uid := uuid.New()
			owner := store.Credential{Kind: "token", ID: "owner"}
			// The agent's row as the other instance wrote it, with the
			// newest event of its history.
			newerElsewhere := func() {
				now := time.Now()
				held, _ := reg.Get(uid)
				reg.Merge([]store.Agent{{UID: uid, Credential: owner, Kind: string(registry.KindUnknown), FirstSeen: now, LastSeen: now,
					Instance: "there", ConnectedAt: now}}, map[[16]byte][]store.Event{uid: held.Events[len(held.Events)-1:]},
					func(t time.Time) time.Time { return t.Add(time.Minute) })
			}
			var merged atomic.Bool
			if tc.duringHello {
				reg.Observe(func(u uuid.UUID) {
					if u == uid && merged.CompareAndSwap(false, true) {
						newerElsewhere()
					}
				})
			}
			a := dialAgent(t, addr, "owner")
			hello := &protobufs.AgentToServer{InstanceUid: uid[:], Capabilities: 1, AgentDescription: &protobufs.AgentDescription{}}
			if tc.duringHello {
				a.send(hello)
			} else {
				if resp := a.roundTrip(hello); resp.ErrorResponse != nil {
					t.Fatalf("refused: %v", resp.ErrorResponse)
				}
				newerElsewhere()
			}
			if code := a.closeCode(); code != CloseReplaced {
				t.Fatalf("closed with %d, want %d", code, CloseReplaced)
			}
			if n := replaced.Load(); n != 1 {
				t.Errorf("%d replaced connections counted, want 1", n)
			}
			x, _ := reg.Get(uid)
			found := false
			for _, e := range x.Events {
				if e.Type == registry.EventConnectionReplaced && strings.Contains(e.Message, "there") &&
					strings.Contains(e.Message, a.ws.LocalAddr().String()) {
					found = true
				}
			}
			if !found {
				t.Errorf("no connection_replaced event naming the other instance and the address %s: %+v", a.ws.LocalAddr(), x.Events)
			}
		})
	}
}
