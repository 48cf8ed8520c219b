package metrics_test

import (
	"io"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/buildinfo"
	"github.com/myriarch/myriarch/server/metrics"
)

func scrape(tb testing.TB, m *metrics.Metrics) string {
	tb.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		tb.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

type agent struct{ kind, version string }

func TestGauges(t *testing.T) {
	many := make([]agent, 0, 1100)
	for i := range 1100 {
		many = append(many, agent{"unknown", "9." + strconv.Itoa(i)})
	}
	tests := []struct {
		name    string
		agents  []agent
		offers  map[string]int
		pool    *metrics.StorePool
		cluster *metrics.Cluster
		want    []string
		wantNot []string
	}{
		{
			name:   "kinds and versions, online or not",
			agents: []agent{{"collector", "0.149.0"}, {"collector", "0.149.0"}, {"collector", "0.149.1"}, {"updater", "0.1.0"}, {"unknown", ""}},
			offers: map[string]int{"offered": 2, "failed": 0},
			want: []string{
				`myriarch_build_info{goversion="` + runtime.Version() + `",version="` + buildinfo.Version + `"} 1`,
				`myriarch_agents{kind="collector",version="0.149.0"} 2`,
				`myriarch_agents{kind="collector",version="0.149.1"} 1`,
				`myriarch_agents{kind="updater",version="0.1.0"} 1`,
				`myriarch_agents{kind="unknown",version=""} 1`,
				`myriarch_offers{state="offered"} 2`,
				`myriarch_offers{state="failed"} 0`,
			},
			wantNot: []string{"myriarch_store_"},
		},
		{
			name: "a PostgreSQL store's pool",
			pool: &metrics.StorePool{Acquired: 3, Idle: 2, Max: 8, Acquires: 1200, Waited: 40, Wait: 1500 * time.Millisecond},
			want: []string{
				`myriarch_store_connections{state="acquired"} 3`,
				`myriarch_store_connections{state="idle"} 2`,
				`myriarch_store_connections_max 8`,
				`myriarch_store_acquires_total 1200`,
				`myriarch_store_acquires_waited_total 40`,
				`myriarch_store_acquire_wait_seconds_total 1.5`,
			},
		},
		{
			name: "the other instances' changes",
			cluster: &metrics.Cluster{Queued: 3, Kinds: map[string]metrics.ClusterKind{
				"agents": {Applied: 10, Resyncs: 1, Failed: 2, Busy: 1500 * time.Millisecond},
				"bogus":  {Applied: 1},
			}},
			want: []string{
				`myriarch_cluster_changes_queued 3`,
				`myriarch_cluster_changes_applied_total{kind="agents"} 10`,
				`myriarch_cluster_resyncs_total{kind="agents"} 1`,
				`myriarch_cluster_apply_failures_total{kind="agents"} 2`,
				`myriarch_cluster_apply_seconds_total{kind="agents"} 1.5`,
				`myriarch_cluster_changes_applied_total{kind="reports"} 0`,
			},
			wantNot: []string{`kind="bogus"`},
		},
		{
			name:    "no offers engine yet",
			offers:  nil,
			wantNot: []string{"myriarch_offers{", "myriarch_agents{"},
		},
		{
			name:   "version series are bounded",
			agents: many,
			want:   []string{`myriarch_agents{kind="unknown",version="9.0"} 1`, `myriarch_agents{kind="unknown",version="other"} 100`},
		},
		{
			name:   "invalid UTF-8 in a reported version",
			agents: []agent{{"collector", "1.0\xff"}},
			want:   []string{`myriarch_agents{kind="collector",version="1.0` + "\uFFFD" + `"} 1`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := metrics.Sources{
				Agents: func(count func(kind, version string)) {
					for _, a := range tt.agents {
						count(a.kind, a.version)
					}
				},
				Offers: func() map[string]int { return tt.offers },
			}
			if tt.pool != nil {
				src.StorePool = func() metrics.StorePool { return *tt.pool }
			}
			if tt.cluster != nil {
				src.Cluster, src.ClusterKinds = func() metrics.Cluster { return *tt.cluster }, []string{"agents", "reports"}
			}
			m := metrics.New(src)
			text := scrape(t, m)
			for _, w := range tt.want {
				if !strings.Contains(text, w+"\n") {
					t.Errorf("scrape lacks %q", w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(text, w) {
					t.Errorf("scrape has %q", w)
				}
			}
		})
	}
}

func TestRegistryAndFleetSources(t *testing.T) {
	f := newFleet(t, 2500)
	defer f.close()
	m := metrics.New(metrics.Sources{
		Agents: metrics.RegistryAgents(f.reg),
		Offers: f.eng.StateCounts,
	})
	text := scrape(t, m)
	for _, w := range []string{
		`myriarch_agents{kind="collector",version="0.149.0"} 2250`,
		`myriarch_agents{kind="collector",version="0.149.1"} 250`,
		`myriarch_agents{kind="updater",version="0.1.0"} 2500`,
		`myriarch_offers{state="up_to_date"} 250`,
		`myriarch_offers{state="failed"} 0`,
	} {
		if !strings.Contains(text, w+"\n") {
			t.Errorf("scrape lacks %q", w)
		}
	}
	total := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "myriarch_offers{") {
			n, _ := strconv.Atoi(l[strings.LastIndexByte(l, ' ')+1:])
			total += n
		}
	}
	if total != 2500 {
		t.Errorf("offers count %d collectors, want 2500:\n%s", total, text)
	}
}
