package console_test

import (
	"net/url"
	"strings"
	"testing"
)

// The overview shows the estate in force and, after a reload that failed,
// its problems with file and line; the previous estate stays.
func TestOverviewShowsTheEstateAndItsLoadErrors(t *testing.T) {
	e := newEnv(t)
	e.fleet("edge", "0.149.0", "")
	e.addVersion("0.149.0")
	e.reload()
	b := e.browser()
	b.login(e.srv.AdminToken())
	_, page := b.do("GET", "/", nil)
	if !strings.Contains(page, "Revision</dt><dd><code>sha256:") || !strings.Contains(page, "Loaded without errors.") {
		t.Fatalf("overview estate section:\n%s", section(page, "ov-estate"))
	}
	e.write("fleets/edge.yaml", "name: edge\npriority: ten\n")
	if code, _ := e.api("POST", "/api/v1/estate/reload", nil); code != 422 {
		t.Fatalf("a broken estate reloaded: %d", code)
	}
	_, page = b.do("GET", "/", nil)
	est := section(page, "ov-estate")
	if !strings.Contains(est, "the previous estate stays in force") || !strings.Contains(est, "fleets/edge.yaml:2: ") {
		t.Fatalf("overview after a failed reload:\n%s", est)
	}
	if !strings.Contains(section(page, "ov-fleets"), "edge") {
		t.Fatal("the fleet of the estate in force is gone from the overview")
	}
}

// section is the HTML of the element with that id, up to its section's end.
func section(page, id string) string {
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</section>")
	if j < 0 {
		return page[i:]
	}
	return page[i : i+j]
}

// A fleet named with spaces, slashes and question marks is acted on as any.
func TestFleetWithAnOddName(t *testing.T) {
	e := newEnv(t)
	e.addVersion("0.149.0")
	e.write("fleets/odd.yaml", "name: \"edge north/1?#\"\npriority: 10\nselector: {site.type: edge}\npackage: otelcol-contrib\ntargetVersion: 0.149.0\n")
	e.reload()
	b := e.browser()
	b.login(e.srv.AdminToken())
	_, page := b.do("GET", "/fleets", nil)
	action := "/fleets/edge%20north%2F1%3F%23/pause"
	if !strings.Contains(page, `action="`+action+`"`) {
		t.Fatalf("no pause form for the fleet:\n%s", page)
	}
	resp, _ := b.do("POST", action, url.Values{"csrf": {b.csrf}})
	if resp.StatusCode != 303 {
		t.Fatalf("pause: %d", resp.StatusCode)
	}
	if _, body := e.api("GET", "/api/v1/fleets", nil); !strings.Contains(string(body), `"pausedBy": "operator"`) {
		t.Fatalf("not paused: %s", body)
	}
}
