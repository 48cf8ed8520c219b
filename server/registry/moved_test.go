package registry

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// A collector restarted on a new version reconnects to another instance
// while the one it left sees its old connection close late (after the
// new one's hello). Whichever instance writes first, and although the
// instance it left had a change of its own still to write, the store
// keeps the description the collector reconnected with.
func TestReconnectedElsewhereKeepsItsNewDescription(t *testing.T) {
	for _, tc := range []struct {
		name       string
		leftFirst  bool // the instance it left writes before the one it joined
		leftChange bool // the instance it left has a row of its own to write
	}{
		{"joined writes first", false, false},
		{"left writes first", true, false},
		{"joined writes first, left had a change", false, true},
		{"left writes first, left had a change", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := sqlite.Open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var mu sync.Mutex
			now := time.Unix(1700000000, 0).UTC()
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			advance := func() { mu.Lock(); now = now.Add(time.Second); mu.Unlock() }
			open := func(instance string) *Registry {
				r, err := Load(ctx, db, nil, slog.New(slog.DiscardHandler),
					Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: clock, Instance: instance})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			}
			left, joined := open("left"), open("joined")
			cred := store.Credential{Kind: "token", ID: "t1"}
			uid := uuid.New()
			hello := func(version string) *protobufs.AgentToServer {
				return &protobufs.AgentToServer{Capabilities: 1, AgentDescription: &protobufs.AgentDescription{IdentifyingAttributes: []*protobufs.KeyValue{
					{Key: "service.name", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: "otelcol"}}},
					{Key: "service.version", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: version}}},
				}}}
			}
			if _, err := left.Report(uid, cred, hello("0.149.0"), false, true); err != nil {
				t.Fatal(err)
			}
			recs, events, err := db.LoadAgents(ctx, MaxEvents)
			if err != nil {
				t.Fatal(err)
			}
			joined.Merge(recs, events, func(t time.Time) time.Time { return t.Add(time.Minute) })
			advance()
			if tc.leftChange {
				if _, err := left.Report(uid, cred, &protobufs.AgentToServer{SequenceNum: 1, Health: &protobufs.ComponentHealth{Healthy: true}}, false, false); err != nil {
					t.Fatal(err)
				}
				advance()
			}
			if _, err := joined.Report(uid, cred, hello("0.149.1"), false, true); err != nil {
				t.Fatal(err)
			}
			advance()
			left.Disconnected(uid)
			order := []*Registry{joined, left}
			if tc.leftFirst {
				order = []*Registry{left, joined}
			}
			for _, r := range order {
				if err := r.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			recs, _, err = db.LoadAgents(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || !bytes.Contains(recs[0].Description, []byte("0.149.1")) {
				t.Fatalf("the stored row does not hold the version it reconnected with: %q", recs[0].Description)
			}
			if want := clock(); !recs[0].LastSeen.Equal(want) {
				t.Errorf("last seen %v, want %v (its old connection closing)", recs[0].LastSeen, want)
			}
		})
	}
}
