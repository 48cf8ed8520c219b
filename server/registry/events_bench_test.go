package registry

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
)

// BenchmarkFullHistoryMemory: what a full history (MaxEvents events of the
// kind a rollout writes) costs each agent in the registry's heap.
func BenchmarkFullHistoryMemory(b *testing.B) {
	const agents = 2000
	for range b.N {
		r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
			Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		cred := store.Credential{Kind: "token", ID: "t1"}
		uids := make([]uuid.UUID, agents)
		for i := range uids {
			uids[i] = uuid.New()
			r.Report(uids[i], cred, &protobufs.AgentToServer{Capabilities: 1}, false, true)
		}
		r.flush(true)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for round := range MaxEvents / 4 { // a rollout writes ~4 events per collector
			v := fmt.Sprintf("0.%d.0", 100+round)
			for _, uid := range uids {
				for _, step := range []string{"none → offered", "offered → downloading", "downloading → installing", "installing → up_to_date"} {
					r.AddEvent(uid, "offer", "offer "+step+" (otelcol-contrib "+v+")")
				}
			}
			r.mu.Lock()
			clear(r.pendingEvents) // the store's write-behind, done
			r.mu.Unlock()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/agents, "heap-B/agent")
		r.Close()
	}
}
