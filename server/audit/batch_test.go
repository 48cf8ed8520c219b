package audit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/store"
)

// gated is a store whose first append waits for release, so that the
// appends arriving meanwhile queue; it records the size of every batch
// and fails the batches fail says to.
type gated struct {
	store.Audit
	release chan struct{}
	fail    func(call int) bool

	mu      sync.Mutex
	batches []int // guarded by mu
}

func (g *gated) AppendAudit(ctx context.Context, seals ...store.AuditSeal) ([]store.AuditRecord, error) {
	g.mu.Lock()
	g.batches = append(g.batches, len(seals))
	call := len(g.batches)
	g.mu.Unlock()
	if call == 1 {
		<-g.release
	}
	if g.fail != nil && g.fail(call) {
		return nil, errors.New("disk full")
	}
	return g.Audit.AppendAudit(ctx, seals...)
}

// Appends that arrive while a batch is written are written together in
// the next, each returned as stored; a failed batch fails each of its
// appends, and the next append writes again.
func TestAppendsShareABatch(t *testing.T) {
	for _, failing := range []bool{false, true} {
		name := map[bool]string{false: "written", true: "failed"}[failing]
		t.Run(name, func(t *testing.T) {
			st, _ := backends[0].open(t)
			g := &gated{Audit: st, release: make(chan struct{})}
			if failing {
				g.fail = func(call int) bool { return call == 2 }
			}
			tr := audit.New(audit.Options{Store: g})
			const waiting = 10
			results := make([]audit.Record, waiting+1)
			errs := make([]error, waiting+1)
			var wg sync.WaitGroup
			wg.Go(func() { results[0], errs[0] = tr.Append(ctx, sample(0)) })
			testkit.WaitFor(t, "the first batch", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.batches) == 1 })
			for i := 1; i <= waiting; i++ {
				wg.Go(func() { results[i], errs[i] = tr.Append(ctx, sample(i)) })
			}
			testkit.WaitFor(t, "the appends to queue", func() bool { return tr.Queued() == waiting })
			close(g.release)
			wg.Wait()
			if g.batches[0] != 1 || g.batches[1] != waiting || len(g.batches) != 2 {
				t.Fatalf("batches %v, want [1 %d]", g.batches, waiting)
			}
			seen := map[int64]bool{}
			for i := 1; i <= waiting; i++ {
				switch {
				case failing && (errs[i] == nil || !strings.Contains(errs[i].Error(), "disk full")):
					t.Fatalf("append %d of the failed batch: %v", i, errs[i])
				case !failing && (errs[i] != nil || results[i].RequestID != sample(i).RequestID || seen[results[i].ID]):
					t.Fatalf("append %d: %+v %v", i, results[i], errs[i])
				}
				seen[results[i].ID] = true
			}
			next, err := tr.Append(ctx, sample(99))
			want := int64(waiting + 2)
			if failing {
				want = 2
			}
			if err != nil || next.ID != want {
				t.Fatalf("the append after: %+v %v, want id %d", next, err, want)
			}
			if v := verify(t, tr); !v.OK || v.Records != want {
				t.Fatalf("%+v", v)
			}
		})
	}
}
