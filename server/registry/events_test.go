package registry

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
)

// A short history is held in an array of exactly its length; a long one
// grows as append grows it, and keeps its newest MaxEvents.
func TestHistoryHeldExactlyWhileShort(t *testing.T) {
	r := newTestRegistry(t, &recordingStore{}, Options{})
	uid := uuid.New()
	if _, err := r.Report(uid, store.Credential{Kind: "token", ID: "t1"}, &protobufs.AgentToServer{Capabilities: 1}, false, true); err != nil {
		t.Fatal(err)
	}
	for i := range MaxEvents + 10 {
		r.mu.Lock()
		a := r.agents[uid]
		r.addEventLocked(a, time.Now(), "test", fmt.Sprint("event ", i))
		evs := a.history()
		r.mu.Unlock()
		if n := len(evs); n <= exactHistory && cap(evs) != n {
			t.Fatalf("%d events held in an array of %d", n, cap(evs))
		}
		if len(evs) > MaxEvents || evs[len(evs)-1].Message != fmt.Sprint("event ", i) {
			t.Fatalf("after event %d: %d held, newest %q", i, len(evs), evs[len(evs)-1].Message)
		}
	}
}
