package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/servertest"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// gateway writes the Blueprint data-flow/gateway (test/e2e/site's): an
// OTLP receiver on otlp, exporting with exporter to a sink under
// /sites/${site.id}.
func (e *env) gateway(otlp, exporter string) {
	e.t.Helper()
	if err := site.WriteGatewayBlueprint(e.estate, otlp, exporter, "127.0.0.1:9"); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) syncState(uid string) string { return e.assignment(uid).SyncState }

// failedHash is the failed configuration the agent's assignment shows.
func (e *env) failedHash(uid string) string { return e.assignment(uid).Failed }

// TestConfigInBrowser: the configuration a fleet's Blueprint renders for a
// collector, in the console — the sync state filter, the desired config,
// a rejected revision shown rolled back (drift) with its failure live, retried from the agent page and
// for the whole fleet, and the diff from the last applied configuration to
// the desired one.
func TestConfigInBrowser(t *testing.T) {
	e := newEnv(t)
	e.gateway("127.0.0.1:4318", "otlphttp")
	e.write("fleets/gw.yaml", "name: gw\nselector: {site.type: gw}\n"+site.GatewayConfig)
	e.reload()
	tok := e.token("gw")
	col := servertest.Collector(t, e.opampURL(), tok, "gw-007", "0.149.0", "site.type", "gw", "site.id", "007")
	servertest.Collector(t, e.opampURL(), tok, "plain-1", "0.149.0", "site.type", "lab")
	uid := col.UID.String()
	testkit.WaitFor(t, "in sync", func() bool { return e.syncState(uid) == "in_sync" })

	c := newChrome(t)
	c.do("login page", chromedp.Navigate(e.base+"/login"), chromedp.WaitVisible(chromedp.ID("token")))
	c.load("log in", chromedp.SendKeys(chromedp.ID("token"), e.srv.AdminToken()), chromedp.Submit(chromedp.ID("token")))
	if alerts := c.text("#ov-alerts"); !strings.Contains(alerts, "0 failed configs") {
		t.Errorf("overview alerts: %q", alerts)
	}

	// The sync state filter.
	c.do("agents", chromedp.Navigate(e.base+"/agents"), chromedp.WaitVisible(chromedp.ID("f-syncState")))
	c.load("filter in_sync", chromedp.SetValue(chromedp.ID("f-syncState"), "in_sync"), chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	if h := c.text("#h-result"); h != "1–1 of 1 agents" {
		t.Fatalf("syncState=in_sync: %q", h)
	}
	c.load("open", chromedp.Click(chromedp.CSS(`table.agents tbody a`)))

	// The desired configuration, rendered for this site.
	c.untilText("#a-config", "/sites/007")
	c.eval("mark", `window.__sameDocument = true`)

	// A revision the collector rejects: rolled back to the last applied
	// configuration (drift), the failure shown live, with a retry.
	e.gateway("127.0.0.1:4318", servertest.RejectedType)
	e.reload()
	c.until("sync state drift", `[...document.querySelectorAll('#a-assignment .state')].some(s => s.textContent === 'drift')`)
	c.untilText("#a-assignment", `unknown type: "nosuch"`)
	c.until("the retry button", `!!document.querySelector('form[action$="/config/retry"]')`)
	c.untilText("#a-events", "config_failed")
	c.untilText("#a-events", `unknown type: "nosuch"`)
	if same := c.eval("same document", `window.__sameDocument === true`); string(same) != "true" {
		t.Fatal("the page was reloaded")
	}
	c.load("retry", chromedp.Click(chromedp.CSS(`form[action$="/config/retry"] button`)))
	if f := c.text("p.flash"); f != "Failed configuration cleared; it is offered again." {
		t.Fatalf("flash %q", f)
	}
	c.untilText("#a-events", "config_retry")
	testkit.WaitFor(t, "rolled back again", func() bool { return e.syncState(uid) == "drift" && e.failedHash(uid) != "" })

	// The fleet page: configuration rollout, and a retry of every failed one.
	c.do("fleets", chromedp.Navigate(e.base+"/fleets"), chromedp.WaitVisible(chromedp.ID("fleet-gw")))
	if f := c.text("#fleet-gw"); !strings.Contains(f, "Configuration rollout: data-flow/gateway") || strings.Contains(f, "Package rollout") {
		t.Fatalf("fleet gw:\n%s", f)
	}
	c.load("retry the fleet", chromedp.Click(chromedp.CSS(`form[action="/fleets/gw/config-retry"] button`)))
	if f := c.text("p.flash"); f != "Failed configurations of fleet gw retried: 1 agent." {
		t.Fatalf("flash %q", f)
	}

	// Back to a good revision, then a change the collector has not taken
	// yet (it is offline): the diff from the last applied configuration.
	e.gateway("127.0.0.1:4318", "otlphttp")
	e.reload()
	testkit.WaitFor(t, "in sync again", func() bool { return e.syncState(uid) == "in_sync" })
	col.Stop()
	e.gateway("127.0.0.1:4319", "otlphttp")
	e.reload()
	testkit.WaitFor(t, "pending", func() bool { return e.syncState(uid) == "pending" })
	c.do("agent", chromedp.Navigate(e.base+"/agents/"+uid), chromedp.WaitVisible(chromedp.CSS("table.diff")))
	diff := c.text("table.diff")
	if !strings.Contains(diff, "endpoint: 127.0.0.1:4318") || !strings.Contains(diff, "endpoint: 127.0.0.1:4319") ||
		!strings.Contains(c.text("#a-config"), "last reported (applied)") {
		t.Fatalf("diff:\n%s", diff)
	}
	c.eval("scroll", `document.getElementById('a-config').scrollIntoView()`)
	c.screenshot(screenshotDir(t), "config.png")
	if del := c.eval("removed line", `document.querySelector('table.diff tr.ddel pre').textContent`); !strings.Contains(string(del), "4318") {
		t.Fatalf("removed line %s", del)
	}
	c.checkNoProblems()
}
