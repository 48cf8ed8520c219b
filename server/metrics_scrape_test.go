package server_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/buildinfo"
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
