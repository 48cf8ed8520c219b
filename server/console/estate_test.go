package console_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/servertest"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// The estate page before a reload, in headless Chromium: the plan of the
// estate directory as it is (a changed Blueprint: the collector's diff),
// a reload from the page, and then nothing left to change; a revision
// planned by name; a broken estate's problems with no reload button; and
// a viewer, who may not see configurations, sees neither plan nor button.
func TestEstateInBrowser(t *testing.T) {
	e := newEnv(t)
	e.gateway("127.0.0.1:4318", "otlphttp")
	e.write("fleets/gw.yaml", "name: gw\nselector: {site.type: gw}\n"+site.GatewayConfig)
	e.reload()
	col := servertest.Collector(t, e.opampURL(), e.token("gw"), "gw-007", "0.149.0", "site.type", "gw", "site.id", "007")
	uid := col.UID.String()
	testkit.WaitFor(t, "in sync", func() bool { return e.syncState(uid) == "in_sync" })
	e.user("otto", "operator", nil)
	e.user("vera", "viewer", nil)

	c := newChrome(t)
	c.do("login page", chromedp.Navigate(e.base+"/login"), chromedp.WaitVisible(chromedp.ID("name")))
	c.load("sign in", chromedp.SendKeys(chromedp.ID("name"), "otto"), chromedp.SendKeys(chromedp.ID("password"), "correct horse battery"),
		chromedp.Submit(chromedp.ID("password")))
	e.gateway("127.0.0.1:4319", "otlphttp")
	c.load("the estate page", chromedp.Click(chromedp.CSS(`nav a[href="/estate"]`)))
	if s := c.text("#plan-summary"); s != "1 collectors: 1 to change, 0 new warnings, 0 render errors, 0 target version changes." {
		t.Fatalf("plan summary %q", s)
	}
	if h := c.text("#h-plan-gw"); !strings.Contains(h, "Fleet gw · Blueprint data-flow/gateway: 1 of 1 collectors change") {
		t.Fatalf("fleet heading %q", h)
	}
	c.do("open the diff", chromedp.Click(chromedp.CSS(`#plan-gw details.plan-body summary`)))
	diff := c.text("#plan-gw pre.udiff")
	if !strings.Contains(diff, "-        endpoint: 127.0.0.1:4318") || !strings.Contains(diff, "+        endpoint: 127.0.0.1:4319") {
		t.Fatalf("diff:\n%s", diff)
	}
	if del := c.eval("removed line", `document.querySelector('#plan-gw pre.udiff .del').textContent`); !strings.Contains(string(del), "4318") {
		t.Fatalf("the removed line is not marked: %s", del)
	}
	c.screenshot(screenshotDir(t), "estate-plan.png")
	c.load("reload", chromedp.Click(chromedp.CSS(`form[action="/estate/reload"] button`)))
	if f := c.text("p.flash"); f != "Estate reloaded." {
		t.Fatalf("flash %q", f)
	}
	if s := c.text("#plan-summary"); !strings.HasPrefix(s, "1 collectors: 0 to change") {
		t.Fatalf("plan after the reload %q", s)
	}

	// A broken estate: every problem, and no reload from here.
	e.write("fleets/gw.yaml", "name: gw\nselector: [\n")
	c.load("a broken estate", chromedp.Navigate(e.base+"/estate"))
	if s := c.text("#plan-broken"); !strings.Contains(s, "The estate does not load (1 problems)") {
		t.Fatalf("broken plan %q", s)
	}
	if n := c.eval("reload buttons", `document.querySelectorAll('form[action="/estate/reload"]').length`); string(n) != "0" {
		t.Fatal("a reload button under a broken plan")
	}
	c.checkNoProblems()
	// A revision by name: refused with its reason (no Git here), a 400.
	c.load("plan a revision", chromedp.SendKeys(chromedp.ID("p-revision"), "HEAD"), chromedp.Submit(chromedp.ID("p-revision")))
	if s := c.text("#e-plan p.error"); !strings.Contains(s, "not in a Git work tree") {
		t.Fatalf("plan of HEAD without Git: %q", s)
	}

	// A viewer: the estate in force, no plan, no button; the API refuses.
	b := e.browser()
	b.signIn("vera", "correct horse battery")
	resp, page := b.do("GET", "/estate", nil)
	if resp.StatusCode != 200 || strings.Contains(page, `id="e-plan"`) || strings.Contains(page, `action="/estate/reload"`) || !strings.Contains(page, `id="e-force"`) {
		t.Fatalf("a viewer's estate page: %d\n%s", resp.StatusCode, page)
	}
	resp, page = b.do("POST", "/estate/reload", url.Values{"csrf": {b.csrf}})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(html.UnescapeString(page), "operator") {
		t.Fatalf("a viewer's reload: %d\n%s", resp.StatusCode, page)
	}
}
