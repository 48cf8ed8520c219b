package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/servertest"
)

// chrome is a headless Chromium tab; problems collects what the page
// itself complains about (Content-Security-Policy violations, script
// errors), which must stay empty.
type chrome struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string // guarded by mu
}

func newChrome(t *testing.T) *chrome {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testenv.Chromium(t)),
		chromedp.NoSandbox, // root in a container has no user namespaces for the sandbox
		chromedp.WindowSize(1280, 800),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	c := &chrome{t: t, ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", testenv.Chromium(t), err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch ev := ev.(type) {
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError && !strings.Contains(ev.Entry.Text, "status of 403") &&
				!strings.Contains(ev.Entry.Text, "status of 401") {
				c.problems = append(c.problems, string(ev.Entry.Source)+": "+ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			c.problems = append(c.problems, "exception: "+ev.ExceptionDetails.Text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// do runs actions with a deadline.
func (c *chrome) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// load runs actions that navigate (a click on a link or a submit button)
// and waits for the new page to load.
func (c *chrome) load(what string, actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	loaded := chromedp.Events(ctx, page.LoadEventFired)
	for {
		err := chromedp.Do(ctx, actions...)
		if err == nil {
			break
		}
		// A live page replaced the element between finding and clicking
		// it: the click did not happen, so it is tried again.
		if ctx.Err() != nil || !replaced(err) {
			c.t.Fatalf("%s: %v", what, err)
		}
	}
	for _, err := range loaded {
		if err != nil {
			c.t.Fatalf("%s: waiting for the page: %v", what, err)
		}
		break
	}
}

// text reads an element's text in one evaluation in the page, so a live
// region replaced meanwhile cannot leave it empty.
func (c *chrome) text(sel string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	for {
		s, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const el = document.querySelector(`+js(sel)+`); return el ? el.innerText : undefined })()`,
			chromedp.WithPollingInterval(50*time.Millisecond)))
		if err == nil {
			return s
		}
		if ctx.Err() != nil || !navigating(err) {
			c.t.Fatalf("text of %s: %v", sel, err)
		}
		// The page went on to another (a redirect) while it was read: read the new one.
	}
}

// logOut clicks the console's log out button and waits for the login page
// it leads to: a navigation started earlier would abort the logout's
// answer and leave its cookie behind.
func (c *chrome) logOut() {
	c.t.Helper()
	c.load("log out", chromedp.Click(chromedp.CSS(`form.logout button`)))
	c.text(`main form#password-form, main #oidc`) // the login page, read once it is there
}

// replaced reports whether err is the browser's answer to an action on an
// element the page has since replaced.
func replaced(err error) bool {
	m := err.Error()
	return strings.Contains(m, "Could not find node with given id") || strings.Contains(m, "Node is detached")
}

// navigating reports whether err is the browser's answer to a script that
// ran in a page being replaced by the next.
func navigating(err error) bool {
	m := err.Error()
	return strings.Contains(m, "Cannot find context with specified id") || strings.Contains(m, "Execution context was destroyed")
}

func (c *chrome) eval(what, js string) json.RawMessage {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// until polls a JavaScript condition in the page (live updates arrive at
// most once a second).
func (c *chrome) until(what, cond string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		body, _ := chromedp.Run(c.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		c.t.Fatalf("waiting for %s: %v\npage:\n%s", what, err, body)
	}
}

// untilText waits for the element's text to contain want (a live region
// may be replaced while it is read).
func (c *chrome) untilText(sel, want string) {
	c.t.Helper()
	c.until(sel+" showing "+want, `(document.querySelector(`+js(sel)+`) || {innerText: ''}).innerText.includes(`+js(want)+`)`)
}

func (c *chrome) screenshot(dir, name string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		c.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *chrome) checkNoProblems() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.problems) > 0 {
		c.t.Fatalf("the browser reported problems:\n%s", strings.Join(c.problems, "\n"))
	}
}

// screenshotDir is where the test leaves its screenshots: a temporary
// directory, or MYRIARCH_CONSOLE_SCREENSHOTS (make console-screenshots).
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("MYRIARCH_CONSOLE_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// fits reports whether [scrollWidth, innerWidth] has the page within the screen.
func fits(raw json.RawMessage) bool {
	var w [2]int
	return json.Unmarshal(raw, &w) == nil && w[0] <= w[1]
}

// js quotes s as a JavaScript string.
func js(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestConsoleInBrowser drives the console in headless Chromium against a
// real myriarchd with real opamp-go agents: log in (a wrong token refused),
// the overview, the agent list and its filters, an agent page following an
// offer live from offered to up_to_date without a reload, resuming a paused
// fleet, creating and revoking a token, a request without the CSRF token
// refused, logging out, and logging in with a one-time link.
func TestConsoleInBrowser(t *testing.T) {
	e := newEnv(t)
	for _, v := range []string{"0.148.0", "0.149.0", "0.149.1"} {
		e.addVersion(v)
	}
	e.fleet("edge", "0.149.0", "")
	e.write("fleets/core.yaml", "name: core\npriority: 10\nselector: {site.type: core}\npackage: otelcol-contrib\ntargetVersion: 0.149.1\n"+
		"rollout: {waveLabel: wave, waves: [\"1\", \"2\"], maxFailures: 0}\n")
	e.reload()
	tok := e.token("site-tokens")
	ws := e.opampURL()

	edgeA := servertest.Collector(t, ws, tok, "edge-a", "0.149.0", "site.type", "edge", "site.id", "007")
	updA := servertest.Updater(t, ws, tok, "edge-a", edgeA.UID)
	coreC := servertest.Collector(t, ws, tok, "core-c", "0.149.0", "site.type", "core", "site.id", "001")
	updC := servertest.Updater(t, ws, tok, "core-c", coreC.UID)
	for i := range 12 { // a fleet worth a screenshot
		v := []string{"0.148.0", "0.149.0", "0.149.0"}[i%3]
		servertest.Collector(t, ws, tok, fmt.Sprintf("edge-%02d", i+10), v, "site.type", "edge", "site.id", fmt.Sprintf("%03d", 100+i))
	}
	// core's wave 1 fails: with maxFailures 0 its rollout pauses.
	offerC := updC.WaitOffer(t, pkg, "0.149.1")
	updC.ReportPackage(t, offerC, pkg, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, 0, "disk full")
	testkit.WaitFor(t, "fleet core to pause", func() bool {
		_, b := e.api("GET", "/api/v1/fleets", nil)
		return strings.Contains(string(b), `"pausedBy": "failures"`)
	})
	testkit.WaitFor(t, "every agent registered", func() bool {
		_, b := e.api("GET", "/api/v1/agents?offset=0&limit=1&events=false", nil)
		return strings.Contains(string(b), `"total": 16`)
	})

	shots := screenshotDir(t)
	c := newChrome(t)

	// A wrong token is refused; the admin token logs in.
	c.do("login page", chromedp.Navigate(e.base+"/"), chromedp.WaitVisible(chromedp.ID("token")))
	c.load("wrong token", chromedp.SendKeys(chromedp.ID("token"), "myradm_wrong"), chromedp.Submit(chromedp.ID("token")))
	if msg := c.text("p.error"); !strings.Contains(msg, "Wrong token") {
		t.Fatalf("wrong token: %q", msg)
	}
	c.load("log in", chromedp.SendKeys(chromedp.ID("token"), e.srv.AdminToken()), chromedp.Submit(chromedp.ID("token")))
	if h := c.text("h1"); h != "Overview" {
		t.Fatalf("after login: %q", h)
	}
	c.until("the live stream", `document.getElementById('live-status').textContent === 'live'`)
	ov := c.text("main")
	for _, want := range []string{"Agents 16", "1 failed offers", "paused by failures", "0.149.0", "0.148.0"} {
		if !strings.Contains(strings.Join(strings.Fields(ov), " "), want) {
			t.Errorf("overview lacks %q:\n%s", want, ov)
		}
	}
	c.screenshot(shots, "overview.png")

	// The agent list, then filtered to one collector.
	c.do("agents", chromedp.Navigate(e.base+"/agents"), chromedp.WaitVisible(chromedp.CSS("table.agents")))
	if h := c.text("#h-result"); h != "1–16 of 16 agents" {
		t.Fatalf("agent list: %q", h)
	}
	c.screenshot(shots, "agents.png")
	c.load("filter", chromedp.SendKeys(chromedp.ID("f-q"), "EDGE-A"), chromedp.SetValue(chromedp.ID("f-kind"), "collector"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	if h := c.text("#h-result"); h != "1–1 of 1 agents" {
		t.Fatalf("filtered list: %q", h)
	}
	c.load("open the agent", chromedp.Click(chromedp.CSS(`table.agents tbody a`)))
	if u := c.eval("url", `location.pathname`); string(u) != js("/agents/"+edgeA.UID.String()) {
		t.Fatalf("opened %s", u)
	}
	c.until("offer up_to_date", `document.getElementById('offer-state').textContent === 'up to date'`)

	// The offer moves live: a new target version, the updater downloading,
	// the collector back on the new version. The page is never reloaded.
	c.eval("mark the page", `window.__sameDocument = true`)
	e.fleet("edge", "0.149.1", "")
	e.reload()
	offer := updA.WaitOffer(t, pkg, "0.149.1")
	c.until("offered", `document.getElementById('offer-state').textContent === 'offered'`)
	updA.ReportPackage(t, offer, pkg, protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, 40, "")
	c.until("downloading at 40%", `document.getElementById('offer-state').textContent === 'downloading' && document.getElementById('dl-percent').textContent === '40%'`)
	c.screenshot(shots, "agent.png")
	updA.ReportPackage(t, offer, pkg, protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, 85, "")
	c.until("downloading at 85%", `document.getElementById('dl-percent') && document.getElementById('dl-percent').textContent === '85%'`)
	if err := edgeA.Client.SetAgentDescription(&protobufs.AgentDescription{
		IdentifyingAttributes:    servertest.CollectorIdentity(edgeA.UID, "0.149.1"),
		NonIdentifyingAttributes: servertest.KVs("host.name", "edge-a", "os.type", "linux", "host.arch", "amd64", "site.type", "edge", "site.id", "007"),
	}); err != nil {
		t.Fatal(err)
	}
	c.until("up_to_date", `document.getElementById('offer-state').textContent === 'up to date'`)
	if same := c.eval("same document", `window.__sameDocument === true`); string(same) != "true" {
		t.Fatal("the page was reloaded")
	}
	c.untilText("#a-events", "offer downloading → up_to_date")

	// Fleets: the paused one first; resume it.
	c.do("fleets", chromedp.Navigate(e.base+"/fleets"), chromedp.WaitVisible(chromedp.CSS("article.fleet")))
	if first := c.eval("first fleet", `document.querySelector('article.fleet').id`); string(first) != js("fleet-core") {
		t.Fatalf("first fleet %s, want the paused core", first)
	}
	c.load("resume", chromedp.Click(chromedp.CSS(`form[action="/fleets/core/resume"] button`)))
	if f := c.text("p.flash"); f != "Rollouts of fleet core resumed." {
		t.Fatalf("flash %q", f)
	}
	if _, b := e.api("GET", "/api/v1/fleets", nil); strings.Contains(string(b), `"paused"`) {
		t.Fatalf("core still paused: %s", b)
	}

	// Tokens: create one (the secret shown once), then revoke it.
	c.do("tokens", chromedp.Navigate(e.base+"/tokens"), chromedp.WaitVisible(chromedp.ID("t-name")))
	c.load("create a token", chromedp.SendKeys(chromedp.ID("t-name"), "ci-token"), chromedp.SendKeys(chromedp.ID("t-labels"), "site=042"),
		chromedp.Click(chromedp.CSS(`form[action="/tokens"] button`)))
	if secret := c.eval("secret", `document.getElementById('secret').value`); !strings.HasPrefix(string(secret), `"myr_`) {
		t.Fatalf("secret %s", secret)
	}
	row := `//tr[th/bdi[text()="ci-token"]]`
	c.load("revoke", chromedp.Click(row+`//summary`), chromedp.Click(row+`//button`))
	if f := c.text("p.flash"); !strings.HasPrefix(f, "Token ci-token revoked") {
		t.Fatalf("flash %q", f)
	}
	if _, b := e.api("GET", "/api/v1/tokens", nil); !strings.Contains(string(b), `"revokedAt"`) {
		t.Fatalf("token not revoked: %s", b)
	}

	// A state-changing request without the CSRF token is refused, even
	// from the console's own page with its session cookie.
	status := c.eval("post without CSRF", `fetch('/tokens', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: 'name=sneaky'}).then(r => r.status)`)
	if string(status) != "403" {
		t.Fatalf("POST without CSRF token: %s", status)
	}
	if _, b := e.api("GET", "/api/v1/tokens", nil); strings.Contains(string(b), "sneaky") {
		t.Fatal("a request without CSRF token created a token")
	}

	// Readable on a phone and at 1280×800: no page is wider than the
	// screen (wide tables scroll in their own region).
	for _, size := range [][2]int64{{390, 844}, {1280, 800}} {
		c.do("viewport", chromedp.EmulateViewport(size[0], size[1], chromedp.EmulateScale(1)))
		for _, path := range []string{"/", "/agents", "/agents/" + edgeA.UID.String(), "/fleets", "/pairings", "/tokens"} {
			c.do(path, chromedp.Navigate(e.base+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
			if w := c.eval("width", `[document.documentElement.scrollWidth, window.innerWidth]`); !fits(w) {
				t.Errorf("%s at %dx%d: page width %s", path, size[0], size[1], w)
			}
		}
		if size[0] == 390 {
			c.do("phone agents", chromedp.Navigate(e.base+"/agents"), chromedp.WaitVisible(chromedp.CSS("main h1")))
			c.screenshot(shots, "phone-agents.png")
		}
	}
	c.do("viewport reset", chromedp.EmulateReset())

	// Log out; the console is closed again; a one-time link logs in once.
	c.logOut()
	if msg := c.text("p.flash"); msg != "Logged out." {
		t.Fatalf("after logout: %q", msg)
	}
	c.do("after logout", chromedp.Navigate(e.base+"/agents"), chromedp.WaitVisible(chromedp.ID("token")))
	_, body := e.api("POST", "/api/v1/console/links", nil)
	var link struct{ Path string }
	json.Unmarshal(body, &link)
	c.do("login link", chromedp.Navigate(e.base+link.Path), chromedp.WaitVisible(chromedp.ID("h-agents")))
	if u := c.eval("url", `location.href`); strings.Contains(string(u), "token") {
		t.Fatalf("the secret stayed in the address bar: %s", u)
	}
	c.checkNoProblems()
}
