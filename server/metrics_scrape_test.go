package server_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/buildinfo"
	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server"
)

func TestMetricsScrape(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.0")
	est.addVersion("0.149.1")
	est.fleet("edge", "0.149.1", "")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil)
	ts.startCollector(tok.Token, "h1", "0.149.0") // no updater: no_updater
	ts.startCollector(tok.Token, "h2", "v0.149.1")
	ts.startCollector(tok.Token, "h3", "0.149.1")

	want := []string{
		`myriarch_build_info{goversion="` + runtime.Version() + `",version="` + buildinfo.Version + `"} 1`,
		`myriarch_agents{kind="collector",version="0.149.0"} 1`,
		`myriarch_agents{kind="collector",version="0.149.1"} 2`, // the registry keeps versions without a leading v
		`myriarch_offers{state="no_updater"} 1`,
		`myriarch_offers{state="up_to_date"} 2`,
		`myriarch_offers{state="failed"} 0`,
		`myriarch_agents_connected{kind="collector"} 3`,
	}
	deadline := time.Now().Add(15 * time.Second)
	var text string
	for {
		var code int
		code, text = getNoToken(t, ts, "/metrics")
		missing := 0
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing++
			}
		}
		if code == 200 && missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("metrics lack %q", w)
		}
	}
	t.Logf("scrape:\n%s", grepLines(text, "myriarch_"))
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// On PostgreSQL the store's connection pool is measured (waits for a
// connection show a busy database or too small a pool), and so is what an
// instance does with the others' changes; on SQLite neither is.
func TestMetricsOnPostgreSQL(t *testing.T) {
	pg := testenv.StartCluster(t)
	on := startServer(t, func(o *server.Options) { o.Store = pg.DSN("postgres") })
	on.createToken("edge", nil)
	_, text := getNoToken(t, on, "/metrics")
	for _, w := range []string{`myriarch_store_connections{state="acquired"} `, `myriarch_store_connections{state="idle"} `,
		"myriarch_store_connections_max 8\n", "myriarch_store_acquires_waited_total ", "myriarch_store_acquire_wait_seconds_total "} {
		if !strings.Contains(text, w) {
			t.Errorf("metrics on PostgreSQL lack %q", w)
		}
	}
	if n := metricValue(t, text, "myriarch_store_acquires_total"); n < 1 {
		t.Errorf("myriarch_store_acquires_total = %v after a start and a token written, want some", n)
	}
	// A second instance applies the token the first created.
	other := startServer(t, func(o *server.Options) { o.Store = pg.DSN("postgres") })
	on.createToken("site", nil)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, text = getNoToken(t, other, "/metrics")
		if strings.Contains(text, "myriarch_cluster_changes_queued ") && !strings.Contains(text, `myriarch_cluster_changes_applied_total{kind="tokens"} 0`) &&
			strings.Contains(text, `myriarch_cluster_changes_applied_total{kind="tokens"} `) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second instance never counted the token's change:\n%s", grepLines(text, "myriarch_cluster_"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, text = getNoToken(t, startServer(t), "/metrics")
	if strings.Contains(text, "myriarch_store_") || strings.Contains(text, "myriarch_cluster_") {
		t.Errorf("metrics on SQLite have the pool's or the cluster's:\n%s", grepLines(text, "myriarch_store_")+grepLines(text, "myriarch_cluster_"))
	}
}

// metricValue is the value of an unlabelled sample.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no sample of %s", name)
	return 0
}
