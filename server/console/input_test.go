package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Bad requests to the console are refused with a reason, and change nothing.
func TestBadRequestsAreRefusedWithAReason(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e.srv.AdminToken())
	csrf := b.csrf
	uid := "0190a3a5-0000-7000-8000-000000000000"
	nine := strings.Repeat("&uid="+uid, 9)
	for _, tc := range []struct {
		method, path string
		form         url.Values
		status       int
		want         string
	}{
		{"GET", "/events?uid=nope", nil, http.StatusBadRequest, "uid must be an instance UID"},
		{"GET", "/events?" + nine[1:], nil, http.StatusBadRequest, "at most 8 uid"},
		{"GET", "/agents/not-a-uid", nil, http.StatusNotFound, "Not an instance UID."},
		{"GET", "/agents/" + uid, nil, http.StatusNotFound, "no agent " + uid},
		{"GET", "/agents?online=maybe", nil, http.StatusBadRequest, "query parameter online: value is not one of the allowed values"},
		{"GET", "/agents?sort=colour", nil, http.StatusBadRequest, "query parameter sort:"},
		{"GET", "/nowhere", nil, http.StatusNotFound, "No such page: /nowhere"},
		{"POST", "/fleets/edge/explode", url.Values{"csrf": {csrf}}, http.StatusNotFound, "No such fleet action: explode"},
		{"POST", "/fleets/nope/resume", url.Values{"csrf": {csrf}}, http.StatusNotFound, "no fleet"},
		{"POST", "/agents/" + uid + "/retry", url.Values{"csrf": {csrf}}, http.StatusNotFound, "no collector"},
		{"POST", "/tokens/nope/revoke", url.Values{"csrf": {csrf}}, http.StatusNotFound, "nope"},
		{"POST", "/tokens", url.Values{"csrf": {csrf}, "name": {"x"}, "labels": {"site=1\nno equals sign"}}, http.StatusBadRequest, "Labels: line 2 is not KEY=VALUE."},
		{"POST", "/tokens", url.Values{"csrf": {csrf}, "name": {"two words"}}, http.StatusBadRequest, "whitespace"},
		{"POST", "/tokens", url.Values{"csrf": {csrf}, "name": {strings.Repeat("n", 70000)}}, http.StatusBadRequest, "form too large"},
	} {
		resp, body := b.do(tc.method, tc.path, tc.form)
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %.60s = %d, want %d with %q:\n%.300s", tc.method, tc.path, resp.StatusCode, tc.status, tc.want, body)
		}
	}
	if _, body := e.api("GET", "/api/v1/tokens", nil); strings.Contains(string(body), `"name": "x"`) || strings.Contains(string(body), "two words") {
		t.Fatalf("a refused request created a token: %s", body)
	}
}
