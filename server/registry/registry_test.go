package registry

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/server/store"
)

// recordingStore remembers every batch written.
type recordingStore struct {
	mu      sync.Mutex
	batches []store.Batch
}

func (s *recordingStore) LoadAgents(context.Context, int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	return nil, nil, nil
}

func (s *recordingStore) Write(_ context.Context, b store.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, b)
	return nil
}

func (s *recordingStore) rows() (agents, seen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		agents += len(b.Agents)
		seen += len(b.LastSeen)
	}
	return
}

func TestHeartbeatsAreCoalesced(t *testing.T) {
	st := &recordingStore{}
	r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	uid := uuid.New()
	cred := store.Credential{Kind: "token", ID: "t1"}
	desc := &protobufs.AgentDescription{IdentifyingAttributes: []*protobufs.KeyValue{{Key: "service.name", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: "otelcol"}}}}}
	if _, err := r.Report(uid, cred, &protobufs.AgentToServer{SequenceNum: 0, AgentDescription: desc, Capabilities: 1}, false, true); err != nil {
		t.Fatal(err)
	}
	r.flush(false)
	agents, _ := st.rows()
	if agents != 1 {
		t.Fatalf("registration wrote %d rows, want 1", agents)
	}
	for i := 1; i <= 100; i++ {
		if _, err := r.Report(uid, cred, &protobufs.AgentToServer{SequenceNum: uint64(i), Capabilities: 1}, false, false); err != nil {
			t.Fatal(err)
		}
		r.flush(false) // the fast loop must not write heartbeats
	}
	agents, seen := st.rows()
	if agents != 1 || seen != 0 {
		t.Fatalf("100 heartbeats wrote %d rows and %d lastSeen updates, want 1 and 0", agents, seen)
	}
	r.flush(true) // the slow loop writes one coalesced lastSeen
	if _, seen := st.rows(); seen != 1 {
		t.Fatalf("coalesced lastSeen updates = %d, want 1", seen)
	}
}

func TestClassifyOrder(t *testing.T) {
	arc := uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig)
	tests := []struct {
		name  string
		ident map[string]string
		non   map[string]string
		caps  uint64
		want  Kind
	}{
		{"updater wins over everything", map[string]string{"service.name": "myriarch-updater"}, map[string]string{BridgeModeAttr: "operator"}, arc, KindUpdater},
		{"bridge by name", map[string]string{"service.name": BridgeServiceName}, nil, arc, KindBridge},
		{"bridge by non-identifying attribute", nil, map[string]string{BridgeModeAttr: "standalone"}, arc, KindBridge},
		{"bridge by identifying attribute", map[string]string{BridgeModeAttr: "x"}, nil, 0, KindBridge},
		{"collector", map[string]string{"service.name": "otelcol"}, nil, arc, KindCollector},
		{"unknown", map[string]string{"service.name": "otelcol"}, nil, 0, KindUnknown},
		{"nothing", nil, nil, 0, KindUnknown},
	}
	for _, tt := range tests {
		d := attributes.Describe(tt.ident, tt.non, nil, nil)
		if got := Classify(d.Identifying(), d.NonIdentifying(), tt.caps); got != tt.want {
			t.Errorf("%s: Classify = %s, want %s", tt.name, got, tt.want)
		}
	}
}
