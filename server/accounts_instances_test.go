package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// On several instances sharing PostgreSQL, a console link made on one
// signs in on another, the session works on every instance and a logout on
// one ends it on all; an API key revoked on one is refused on the others
// at once.
func TestSessionsKeysAndLinksOnEveryInstance(t *testing.T) {
	ins := startInstances(t, 2)
	a, b := ins[0], ins[1]

	code, body := a.api("POST", "/api/v1/console/links", nil)
	if code != http.StatusCreated {
		t.Fatalf("link: %d %s", code, body)
	}
	var link struct{ Path string }
	json.Unmarshal(body, &link)
	secret := strings.TrimPrefix(link.Path, "/login#token=")
	br := newConsoleClient(t)
	if code := br.loginAt(b, secret); code != http.StatusSeeOther {
		t.Fatalf("a link made on one instance, used on another: %d", code)
	}
	for _, ts := range ins {
		if code := br.get(ts, "/fleets"); code != http.StatusOK {
			t.Fatalf("the session on instance %s: %d", ts.AdminAddr(), code)
		}
	}
	if code := newConsoleClient(t).loginAt(a, secret); code != http.StatusUnauthorized {
		t.Fatalf("the link used again on its own instance: %d", code)
	}
	br.post(a, "/logout")
	if code := br.get(b, "/fleets"); code != http.StatusSeeOther {
		t.Fatalf("after a logout on the first instance, the second: %d", code)
	}

	code, body = a.api("POST", "/api/v1/apikeys", map[string]any{"name": "ci", "role": "viewer"})
	var key struct{ ID, Secret string }
	json.Unmarshal(body, &key)
	if code != http.StatusCreated {
		t.Fatalf("key: %d %s", code, body)
	}
	if code, _ := b.apiAs(key.Secret, "GET", "/api/v1/agents"); code != http.StatusOK {
		t.Fatalf("a key made on one instance, used on another: %d", code)
	}
	if code, body := a.api("DELETE", "/api/v1/apikeys/"+key.ID, nil); code != http.StatusOK {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if code, body := b.apiAs(key.Secret, "GET", "/api/v1/agents"); code != http.StatusUnauthorized || !strings.Contains(string(body), "was revoked") {
		t.Fatalf("a key revoked on one instance, on another at once: %d %s", code, body)
	}
}

// consoleClient is a browser without redirects, for the console's forms.
type consoleClient struct {
	t    *testing.T
	c    *http.Client
	csrf string
}

var csrfValue = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func newConsoleClient(t *testing.T) *consoleClient {
	jar, _ := cookiejar.New(nil)
	return &consoleClient{t: t, c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *consoleClient) do(ts *testServer, method, path string, form url.Values) int {
	c.t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, "http://"+ts.AdminAddr().String()+path, rd)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfValue.FindSubmatch(body); m != nil {
		c.csrf = string(m[1])
	}
	return resp.StatusCode
}

func (c *consoleClient) get(ts *testServer, path string) int { return c.do(ts, "GET", path, nil) }

func (c *consoleClient) post(ts *testServer, path string) int {
	return c.do(ts, "POST", path, url.Values{"csrf": {c.csrf}})
}

// loginAt logs in at ts's console with a token or a link's secret (the
// cookies are per host: every instance listens on 127.0.0.1).
func (c *consoleClient) loginAt(ts *testServer, secret string) int {
	c.get(ts, "/login")
	code := c.do(ts, "POST", "/login", url.Values{"csrf": {c.csrf}, "token": {secret}, "next": {"/"}})
	if code == http.StatusSeeOther {
		c.get(ts, "/")
	}
	return code
}
