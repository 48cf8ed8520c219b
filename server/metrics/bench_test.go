package metrics_test

import (
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server/metrics"
)

// benchAgents is the fleet size of BenchmarkScrape (MYRIARCH_BENCH_AGENTS
// overrides it): 100 000 agents, 50 000 collector/updater pairs.
func benchAgents(b *testing.B) int {
	if s := os.Getenv("MYRIARCH_BENCH_AGENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 {
			b.Fatalf("MYRIARCH_BENCH_AGENTS=%q: want an integer of at least 2", s)
		}
		return n
	}
	return 100000
}

// BenchmarkScrape measures GET /metrics as myriarchd serves it, every gauge
// sampled from a registry and offers engine holding the fleet; "agents" is
// the walk over the registry alone, "offers" the fleets' offer states alone.
func BenchmarkScrape(b *testing.B) {
	f := newFleet(b, benchAgents(b)/2)
	defer f.close()
	m := metrics.New(metrics.Sources{
		Connected: func() map[string]int { return map[string]int{} },
		Agents:    metrics.RegistryAgents(f.reg),
		Offers:    f.eng.StateCounts,
	})
	// The premise: every agent is counted.
	text := scrape(b, m)
	want := `myriarch_agents{kind="updater",version="0.1.0"} ` + strconv.Itoa(benchAgents(b)/2)
	if !strings.Contains(text, want+"\n") {
		b.Fatalf("scrape lacks %q:\n%s", want, text)
	}
	b.Run("scrape", func(b *testing.B) {
		b.ReportAllocs()
		h := m.Handler()
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != 200 {
				b.Fatal(rec.Code)
			}
		}
	})
	b.Run("agents", func(b *testing.B) {
		b.ReportAllocs()
		walk := metrics.RegistryAgents(f.reg)
		for b.Loop() {
			n := 0
			walk(func(string, string) { n++ })
			if n != benchAgents(b) {
				b.Fatalf("walked %d agents", n)
			}
		}
	})
	b.Run("offers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(f.eng.StateCounts()) == 0 {
				b.Fatal("no offer states")
			}
		}
	})
}
