package registry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// Forget removes an offline agent at once, from memory and the store, and
// tells the observers; an online or unknown agent is refused and kept.
func TestForget(t *testing.T) {
	now := time.Unix(1e9, 0)
	var logs bytes.Buffer
	st := &recordingStore{}
	r, err := Load(context.Background(), st, nil, slog.New(slog.NewTextHandler(&logs, nil)),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	offline, polled, connected := uuid.New(), uuid.New(), uuid.New()
	r.Report(offline, cred1, &protobufs.AgentToServer{}, true, false)
	now = now.Add(2 * time.Minute) // past the plain-HTTP online window
	r.Report(polled, cred1, &protobufs.AgentToServer{}, true, false)
	r.Report(connected, cred1, &protobufs.AgentToServer{}, false, true)
	var told []uuid.UUID
	r.Observe(func(u uuid.UUID) { told = append(told, u) })

	for _, tc := range []struct {
		uid  uuid.UUID
		want error
	}{
		{polled, ErrAgentOnline},
		{connected, ErrAgentOnline},
		{uuid.New(), ErrUnknownAgent},
	} {
		if err := r.Forget(tc.uid); !errors.Is(err, tc.want) {
			t.Errorf("Forget(%s): %v, want %v", tc.uid, err, tc.want)
		}
	}
	if len(told) != 0 || len(r.List("", false)) != 3 {
		t.Fatalf("refusals changed something: told %v, %d agents", told, len(r.List("", false)))
	}
	if err := r.Forget(offline); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get(offline); ok || len(r.List("", false)) != 2 || !slices.Equal(told, []uuid.UUID{offline}) {
		t.Fatalf("forgotten agent: still there %v, %d listed, told %v", ok, len(r.List("", false)), told)
	}
	st.mu.Lock()
	deleted := false
	for _, b := range st.batches {
		deleted = deleted || slices.Contains(b.Delete, [16]byte(offline))
	}
	st.mu.Unlock()
	if !deleted {
		t.Error("the forgotten agent was not deleted from the store at once")
	}
	if !strings.Contains(logs.String(), "agent forgotten by an operator") {
		t.Errorf("not logged:\n%s", logs.String())
	}
	if res, err := r.Report(offline, cred1, &protobufs.AgentToServer{}, true, false); err != nil || !res.New {
		t.Errorf("forgotten agent coming back: %+v %v, want a new registration", res, err)
	}
}

// Gone drops agents another instance deleted, but never one connected
// here (its next write brings its row back).
func TestGone(t *testing.T) {
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler), Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	elsewhere, here := uuid.New(), uuid.New()
	r.Report(elsewhere, cred1, &protobufs.AgentToServer{}, true, false)
	r.Report(here, cred1, &protobufs.AgentToServer{}, false, true)
	var told []uuid.UUID
	r.Observe(func(u uuid.UUID) { told = append(told, u) })
	r.Gone([]uuid.UUID{elsewhere, here, uuid.New()})
	if _, ok := r.Get(elsewhere); ok {
		t.Error("an agent deleted elsewhere was kept")
	}
	if _, ok := r.Get(here); !ok {
		t.Error("an agent connected here was dropped")
	}
	if !slices.Equal(told, []uuid.UUID{elsewhere}) {
		t.Errorf("told %v", told)
	}
}
