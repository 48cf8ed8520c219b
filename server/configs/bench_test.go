package configs

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// sharedExporter is the shared Component the revision changes.
const sharedExporter = `name: out
class: exporter
type: file
version: %d
owner: data-flow-owners
config:
  path: /var/lib/otelcol/${site.id}-%d.json
`

const sharedBlueprint = `name: gw
version: 1
owner: data-flow-owners
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
    config:
      protocols:
        http:
          endpoint: ${host.name}:4318
  - name: batch
    class: processor
    type: batch
    version: 1
pipelines:
  logs:
    - component: in
    - component: batch
    - component: data-flow/out
      track: head
`

// BenchmarkNewRevision10000: a new revision changes one shared Component
// that the Blueprint of one fleet of 10 000 collectors (each with its own
// site and host, so 10 000 distinct bodies) uses. One op is SetEstate:
// every collector re-rendered, hashed, its desired configuration set and
// queued for sending. B/assignment is the live heap the engine holds per
// collector after the first revision (bodies included).
func BenchmarkNewRevision10000(b *testing.B) {
	const n = 10000
	h := newHarness(b)
	h.write("teams/data-flow/blueprints/gw.yaml", sharedBlueprint)
	h.write("teams/data-flow/components/out.yaml", fmt.Sprintf(sharedExporter, 1, 1))
	h.write("fleets/edge.yaml", "name: edge\nselector:\n  site.type: edge\nconfig:\n  blueprint: data-flow/gw\n")
	uids := make([]uuid.UUID, n)
	for i := range uids {
		uids[i] = uuid.New()
		h.connect(uids[i], "site.type=edge", fmt.Sprintf("site.id=edge-%05d", i), fmt.Sprintf("host.name=host-%05d", i))
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	h.start()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perAssignment := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	if r := h.rec(uids[0]); r.desired == "" || r.desired != r.assigned {
		b.Fatalf("not configured at start: %+v", r.persisted())
	}
	rev := 1
	for b.Loop() {
		b.StopTimer()
		rev++
		h.write("teams/data-flow/components/out.yaml", fmt.Sprintf(sharedExporter, rev, rev))
		est := h.estate()
		b.StartTimer()
		h.e.SetEstate(est)
		b.StopTimer()
		for _, u := range []uuid.UUID{uids[0], uids[n-1]} {
			if r := h.rec(u); !strings.Contains(h.body(r.desired), fmt.Sprintf("-%d.json", rev)) || r.desired != r.assigned {
				b.Fatalf("revision %d not desired: %q", rev, h.body(r.desired))
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(perAssignment, "B/assignment")
}
