package providerreport

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/agent/providers"
	"github.com/myriarch/myriarch/internal/providerwire"
	"github.com/myriarch/myriarch/internal/vars"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sender records messages; every other send is refused as pending first.
type sender struct {
	mu      sync.Mutex
	msgs    []providerwire.Snapshot
	at      []time.Time
	pending bool
}

func (s *sender) SendCustomMessage(m *protobufs.CustomMessage) (chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := make(chan struct{})
	if s.pending = !s.pending; s.pending {
		close(done)
		return done, types.ErrCustomMessagePending
	}
	var w providerwire.Snapshot
	if err := json.Unmarshal(m.Data, &w); err != nil || m.Capability != providerwire.Capability || m.Type != providerwire.MessageType {
		panic(fmt.Sprintf("bad message %s %s: %v", m.Capability, m.Type, err))
	}
	s.msgs = append(s.msgs, w)
	s.at = append(s.at, time.Now())
	close(done)
	return done, nil
}

func (s *sender) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

func (s *sender) last() providerwire.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.msgs[len(s.msgs)-1]
}

func snap(site string) providers.Snapshot {
	return providers.Snapshot{Context: map[string]any{"local": map[string]any{"site": site}}}
}

func waitCount(t *testing.T, s *sender, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages, want %d", s.count(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReporter(t *testing.T) {
	s := &sender{}
	r := New(s, nil)
	r.interval = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	r.Update(snap("a"))
	waitCount(t, s, 1)
	// A burst: the newest wins, one message after the interval.
	for _, v := range []string{"b", "c", "d"} {
		r.Update(snap(v))
	}
	waitCount(t, s, 2)
	time.Sleep(3 * r.interval)
	if n := s.count(); n != 2 || s.last().Context["local"]["site"] != "d" || s.last().Seq != 2 {
		t.Fatalf("%d messages, last %+v", n, s.last())
	}
	if gap := s.at[1].Sub(s.at[0]); gap < r.interval {
		t.Fatalf("two messages %v apart, less than the interval", gap)
	}
	// The same data again is not sent; after a new connection it is.
	r.Update(snap("d"))
	time.Sleep(3 * r.interval)
	if s.count() != 2 {
		t.Fatal("unchanged data sent again")
	}
	r.Connected()
	waitCount(t, s, 3)
	if s.last().Context["local"]["site"] != "d" {
		t.Fatalf("resent %+v", s.last())
	}
}

func TestEncodeBounds(t *testing.T) {
	var ms []vars.Mapping
	for i := range 1500 {
		ms = append(ms, vars.Mapping{Provider: "docker", ID: fmt.Sprintf("c%04d", i), Vars: map[string]any{"name": "n"}})
	}
	big := map[string]any{}
	for i := range 300 {
		big[fmt.Sprintf("k%03d", i)] = "v"
	}
	big["a_long"] = strings.Repeat("x", 5000)
	data := Encode(providers.Snapshot{Context: map[string]any{"local": big}, Mappings: ms}, 7)
	var w providerwire.Snapshot
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	if len(w.Dynamic["docker"]) != 1000 || w.Truncated["dynamic.docker mappings over 1000"] != 500 || w.Seq != 7 {
		t.Fatalf("mappings %d, truncated %v", len(w.Dynamic["docker"]), w.Truncated)
	}
	if len(w.Context["local"]) != 256 || w.Truncated["context.local keys over 256"] != 45 {
		t.Fatalf("context keys %d, truncated %v", len(w.Context["local"]), w.Truncated)
	}
	if v, _ := w.Context["local"]["a_long"].(string); len(v) > 4096 || w.Truncated["context.local values over 4096 bytes"] != 1 {
		t.Fatalf("long value %d bytes", len(v))
	}
	// Over 1 MiB: the largest provider is halved until it fits.
	var huge []vars.Mapping
	for i := range 1000 {
		huge = append(huge, vars.Mapping{Provider: "docker", ID: fmt.Sprintf("c%04d", i), Vars: map[string]any{"blob": strings.Repeat("y", 4000)}})
	}
	data = Encode(providers.Snapshot{Mappings: huge}, 1)
	if len(data) > providerwire.MaxBytes {
		t.Fatalf("%d bytes", len(data))
	}
	w = providerwire.Snapshot{}
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	if n := len(w.Dynamic["docker"]); n == 0 || n+w.Truncated["dynamic.docker mappings over 1 MiB or 65536 values"] != 1000 {
		t.Fatalf("%d mappings kept, truncated %v", n, w.Truncated)
	}
	// Within 1 MiB but over the values a snapshot may hold, and nested
	// deeper than a variable may: halved until it fits, the deep value
	// sent as its JSON text.
	var wide []vars.Mapping
	for i := range 1000 {
		list := make([]any, 100)
		for j := range list {
			list[j] = j
		}
		wide = append(wide, vars.Mapping{Provider: "docker", ID: fmt.Sprintf("c%04d", i), Vars: map[string]any{"l": list}})
	}
	deep := any("leaf")
	for range 12 {
		deep = map[string]any{"d": deep}
	}
	data = Encode(providers.Snapshot{Context: map[string]any{"local": map[string]any{"deep": deep}}, Mappings: wide}, 1)
	if err := providerwire.CheckShape(data); err != nil || len(data) > providerwire.MaxBytes {
		t.Fatalf("%d bytes: %v", len(data), err)
	}
	w = providerwire.Snapshot{}
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	if n := len(w.Dynamic["docker"]); n == 0 || n+w.Truncated["dynamic.docker mappings over 1 MiB or 65536 values"] != 1000 {
		t.Fatalf("%d mappings kept, truncated %v", n, w.Truncated)
	}
	if w.Truncated["context.local values nested over 8 (sent as JSON text)"] != 1 {
		t.Fatalf("truncated %v", w.Truncated)
	}
}
