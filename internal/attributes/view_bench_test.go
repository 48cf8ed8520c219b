package attributes

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkViewHeld reports the heap a collector's view holds with its
// values (as the load generator's collectors describe themselves: ten
// attributes, a host name and an instance UID of their own, the rest
// shared), keys shared as a server shares them, the repeated values
// referred to in the dictionary of the process.
func BenchmarkViewHeld(b *testing.B) {
	const n = 10000
	s := &sharing{}
	held := make([]View, n)
	var before, after runtime.MemStats
	for b.Loop() {
		clear(held)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			ident := map[string]string{"service.name": "otelcol-contrib", "service.version": "0.149.0",
				"service.instance.id": fmt.Sprintf("0193a6f2-7c1e-7d3a-9b4f-%012x", i)}
			non := map[string]string{"host.name": fmt.Sprintf("host-%05d", i), "os.type": "linux", "host.arch": "amd64",
				"os.description": "Debian GNU/Linux 13 (trixie)", "site.type": "edge",
				"site.name": "site-042", "site.region": "region-7"}
			held[i] = NewView(ident, non, nil, s)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/view")
	runtime.KeepAlive(held)
}
