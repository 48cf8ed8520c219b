package console_test

import (
	"encoding/hex"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/servertest"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// inert is true in a page where nothing a peer sent became markup or code:
// no image, SVG or extra script element, no event-handler attribute, no
// hidden or reordering character, and no marker a payload would have set.
const inert = `(() => {
  const bad = [];
  if (window.__pwned !== undefined) bad.push('a payload ran: ' + window.__pwned);
  if (document.querySelectorAll('img, svg, iframe, object, embed').length) bad.push('markup from a value');
  if (document.scripts.length !== 1) bad.push(document.scripts.length + ' scripts');
  for (const el of document.querySelectorAll('*')) for (const a of el.attributes) if (a.name.startsWith('on')) bad.push('attribute ' + a.name);
  const text = document.body.textContent;
  for (const c of ['\u202e', '\u2066', '\u200b', '\u0000', '\u001b']) if (text.includes(c)) bad.push('character U+' + c.charCodeAt(0).toString(16));
  if (text.length > 200000) bad.push(text.length + ' characters of text');
  return bad.join('; ');
})()`

// A peer fills an agent with hostile values: markup, script, event
// handlers, right-to-left overrides, NUL and escape characters, 10 000
// character values, in attributes, labels, health, events and token names.
// Each page that shows them keeps them inert, visible as text and bounded.
func TestHostileValuesRenderInert(t *testing.T) {
	e := newEnv(t)
	// The site's id reaches the rendered configuration too.
	e.gateway("127.0.0.1:4318", "otlphttp")
	e.write("fleets/gw.yaml", "name: gw\nselector: {site.type: hostile}\n"+site.GatewayConfig)
	e.reload()
	code, body := e.api("POST", "/api/v1/tokens", map[string]any{"name": `"><svg/onload=window.__pwned=1>`,
		"labels": map[string]string{"note": "<img src=x onerror=window.__pwned=2>", "rtl": "\u202Eevil"}})
	if code != 201 {
		t.Fatalf("token: %d %s", code, body)
	}
	tok := strings.Split(strings.Split(string(body), `"token": "`)[1], `"`)[0]
	uid := uuid.Must(uuid.NewV7())
	long := strings.Repeat("W", 10000)
	servertest.Start(t, servertest.Spec{OpAMPURL: e.opampURL(), Token: tok, UID: uid, Capabilities: servertest.CollectorCaps,
		Identifying: servertest.KVs("service.name", "otelcol-contrib", "service.version", "0.149.0<script>window.__pwned=3</script>",
			"service.instance.id", uid.String()),
		NonIdentifying: servertest.KVs("host.name", "<script>window.__pwned=4</script>",
			"evil", `"><img src=x onerror="window.__pwned=5">`,
			"rtl", "invoice\u202Egnp.exe", "nul", "a\x00b\x1b[31m", "long", long, "zw", "a\u200bb",
			"site.type", "hostile", "site.id", "<img src=x onerror=window.__pwned=9>\u202E",
			"labels.<img src=x onerror=window.__pwned=6>", "x"),
		Health: &protobufs.ComponentHealth{Healthy: false, Status: "<b>bold</b>",
			LastError: "boom\x00<script>window.__pwned=7</script>\u202E",
			ComponentHealthMap: map[string]*protobufs.ComponentHealth{
				"<svg onload=window.__pwned=8>": {LastError: strings.Repeat("E", 10000) + "\u2066"},
			}},
	})
	testkit.WaitFor(t, "the hostile agent configured", func() bool {
		_, b := e.api("GET", "/api/v1/agents/"+uid.String(), nil)
		return strings.Contains(string(b), "label_attribute_dropped") && e.syncState(uid.String()) == "in_sync"
	})

	c := newChrome(t)
	c.do("login page", chromedp.Navigate(e.base+"/login"), chromedp.WaitVisible(chromedp.ID("token")))
	c.load("log in", chromedp.SendKeys(chromedp.ID("token"), e.srv.AdminToken()), chromedp.Submit(chromedp.ID("token")))
	for _, page := range []struct {
		path, ready string
		visible     []string
	}{
		{"/agents/" + uid.String(), "h-events", []string{
			"<script>window.__pwned=4</script>", // the host name, as text
			`"><img src=x onerror="window.__pwned=5">`,
			"invoice⟨U+202E⟩gnp.exe",
			"ab⟨U+001B⟩[31m", // NUL removed by the registry, ESC shown
			"a⟨U+200B⟩b",
			"(3896 more characters)", // the registry keeps 4 096, the table shows 200
			"labels.<img src=x onerror=window.__pwned=6>",
			"boom⟨U+0000⟩<script>window.__pwned=7</script>⟨U+202E⟩",
			"<svg onload=window.__pwned=8>",
			"<img src=x onerror=window.__pwned=2>", // a token label
			"⟨U+202E⟩evil",
			`"><svg/onload=window.__pwned=1>`,                     // the token's name
			"/sites/<img src=x onerror=window.__pwned=9>⟨U+202E⟩", // in the desired configuration
		}},
		{"/agents", "h-result", []string{"<script>window.__pwned=4</script>", "0.149.0<script>window.__pwned=3</script>"}},
		{"/tokens", "h-list", []string{`"><svg/onload=window.__pwned=1>`, "note=<img src=x onerror=window.__pwned=2>"}},
		{"/", "h-versions", []string{"0.149.0<script>window.__pwned=3</script>"}},
	} {
		c.do(page.path, chromedp.Navigate(e.base+page.path), chromedp.WaitVisible(chromedp.ID(page.ready)))
		if bad := c.eval("inert", inert); string(bad) != `""` {
			t.Errorf("%s: %s", page.path, bad)
		}
		text := string(c.eval("text", `document.body.innerText`))
		var shown string
		if err := jsonUnmarshal(text, &shown); err != nil {
			t.Fatal(err)
		}
		for _, v := range page.visible {
			if !strings.Contains(shown, v) {
				t.Errorf("%s does not show %q as text in:\n%s", page.path, v, shown)
			}
		}
	}
	c.checkNoProblems()
}

// A link cannot make the console say that something happened: the message
// after an action is kept in the operator's session and shown once, on
// the page the action redirected to; a crafted query shows nothing.
func TestCraftedLinksShowNoMessage(t *testing.T) {
	e := newEnv(t)
	e.addVersion("0.149.0")
	e.fleet("edge", "0.149.0", "")
	e.reload()
	tok := e.token("ci")
	col := servertest.Collector(t, e.opampURL(), tok, "edge-1", "0.149.0", "site.type", "edge")
	testkit.WaitFor(t, "the collector registered", func() bool { code, _ := e.agentJSON(col.UID.String()); return code == 200 })
	b := e.browser()
	b.login(e.srv.AdminToken())
	agent := "/agents/" + col.UID.String()
	for _, link := range []string{
		"/tokens?done=revoked&name=" + url.QueryEscape("ci; your console was compromised, call +1 555 0100"),
		"/fleets?done=pause&fleet=edge",
		"/fleets?done=retry&fleet=edge&n=9999",
		"/fleets?done=config-retry&fleet=" + url.QueryEscape("anything at all"),
		agent + "?done=offer-retried",
		agent + "?done=config-retried",
	} {
		resp, body := b.do("GET", link, nil)
		if resp.StatusCode != 200 || strings.Contains(body, `class="flash"`) {
			t.Errorf("GET %s: %d with a message: %s", link, resp.StatusCode, flashOf(body))
		}
	}

	// A real action's message: in its session, on its page, once.
	var list struct{ Tokens []struct{ ID, Name string } }
	_, body := e.api("GET", "/api/v1/tokens", nil)
	if err := jsonUnmarshal(string(body), &list); err != nil || len(list.Tokens) != 1 {
		t.Fatalf("tokens: %s", body)
	}
	resp, _ := b.do("POST", "/tokens/"+list.Tokens[0].ID+"/revoke", url.Values{"csrf": {b.csrf}})
	done := resp.Header.Get("Location")
	if resp.StatusCode != 303 || !strings.HasPrefix(done, "/tokens?done=") {
		t.Fatalf("revoke: %d %s", resp.StatusCode, done)
	}
	key := strings.TrimPrefix(done, "/tokens?done=")
	for _, tc := range []struct {
		name string
		b    *browser
		path string
		want string
	}{
		{"another session", otherBrowser(t, e), done, ""},
		{"another page", b, "/fleets?done=" + key, ""},
		{"its page", b, done, "Token ci revoked; agents connected with it were disconnected."},
		{"its page again", b, done, ""},
	} {
		_, body := tc.b.do("GET", tc.path, nil)
		if got := flashOf(body); got != tc.want {
			t.Errorf("%s: GET %s shows %q, want %q", tc.name, tc.path, got, tc.want)
		}
	}
	resp, _ = b.do("POST", "/fleets/edge/pause", url.Values{"csrf": {b.csrf}})
	if _, body := b.do("GET", resp.Header.Get("Location"), nil); flashOf(body) != "Rollouts of fleet edge paused." {
		t.Errorf("after pausing: %q", flashOf(body))
	}
}

var flashPara = regexp.MustCompile(`<p class="flash" role="status">([^<]*)</p>`)

// flashOf is the page's success message ("" without one).
func flashOf(page string) string {
	if m := flashPara.FindStringSubmatch(page); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

func otherBrowser(t *testing.T, e *env) *browser {
	t.Helper()
	o := e.browser()
	if resp := o.login(e.srv.AdminToken()); resp.StatusCode != 303 {
		t.Fatalf("second session: %d", resp.StatusCode)
	}
	return o
}

func (e *env) agentJSON(uid string) (int, []byte) { return e.api("GET", "/api/v1/agents/"+uid, nil) }

// An agent that reports another agent's configuration hash is not shown a
// diff against that configuration: the console compares with a reported
// hash only when this server gave the agent that configuration, and the
// API answers the other agent's body to neither.
func TestReportedConfigOfAnotherAgentIsNotShown(t *testing.T) {
	e := newEnv(t)
	e.gateway("127.0.0.1:4318", "otlphttp")
	e.write("fleets/gw.yaml", "name: gw\nselector: {site.type: gw}\n"+site.GatewayConfig)
	e.reload()
	tok := e.token("gw")
	a := servertest.Collector(t, e.opampURL(), tok, "gw-001", "0.149.0", "site.type", "gw", "site.id", "001")
	testkit.WaitFor(t, "a in sync", func() bool { return e.syncState(a.UID.String()) == "in_sync" })
	aHash := e.assignment(a.UID.String()).Desired
	// b never answers a configuration, so what it reports is what it is told to.
	bUID := uuid.Must(uuid.NewV7())
	b := servertest.Start(t, servertest.Spec{OpAMPURL: e.opampURL(), Token: tok, UID: bUID,
		Identifying:    servertest.CollectorIdentity(bUID, "0.149.0"),
		NonIdentifying: servertest.KVs("host.name", "gw-002", "os.type", "linux", "host.arch", "amd64", "site.type", "gw", "site.id", "002"),
		Capabilities:   servertest.CollectorCaps, IgnoreConfig: true})
	b.WaitMessage(t, "its configuration", func(m *types.MessageData) bool { return m.RemoteConfig != nil })
	raw, _ := hex.DecodeString(aHash)
	if err := b.Client.SetRemoteConfigStatus(&protobufs.RemoteConfigStatus{LastRemoteConfigHash: raw,
		Status: protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "b reporting a's hash", func() bool { return e.assignment(bUID.String()).Reported.Hash == aHash })

	for _, tc := range []struct {
		uid    string
		status int
	}{{a.UID.String(), 200}, {bUID.String(), 404}} {
		if code, body := e.api("GET", "/api/v1/agents/"+tc.uid+"/config?hash="+aHash, nil); code != tc.status {
			t.Errorf("a's configuration asked of %s: %d %.200s, want %d", tc.uid, code, body, tc.status)
		}
	}
	br := e.browser()
	br.login(e.srv.AdminToken())
	resp, page := br.do("GET", "/agents/"+bUID.String(), nil)
	config := section(page, "a-config")
	if resp.StatusCode != 200 || !strings.Contains(config, "/sites/002") {
		t.Fatalf("b's page: %d, configuration section:\n%s", resp.StatusCode, config)
	}
	if strings.Contains(config, "/sites/001") || strings.Contains(config, `class="diff"`) ||
		!strings.Contains(config, "No diff: the last reported configuration is not one this server gave this agent") {
		t.Errorf("b's page shows a's configuration or a diff against it:\n%s", config)
	}
}

type assignmentDoc struct {
	SyncState string `json:"syncState"`
	Failed    string `json:"failed"`
	Desired   string `json:"desired"`
	Reported  struct {
		Hash string `json:"hash"`
	} `json:"reported"`
}

func (e *env) assignment(uid string) assignmentDoc {
	_, body := e.agentJSON(uid)
	var a struct {
		Assignment assignmentDoc `json:"assignment"`
	}
	jsonUnmarshal(string(body), &a)
	return a.Assignment
}
