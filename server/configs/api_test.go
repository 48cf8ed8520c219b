package configs

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/apispec/apispectest"
	"github.com/myriarch/myriarch/server/rollout/rollouttest"
)

// GET /api/v1/agents/{uid}/config?hash= answers only a configuration of
// that agent's own: its desired, assigned, applied or failed one. Another
// agent's configuration is not its own, even once it reports that hash.
func TestConfigByHashIsTheAgentsOwn(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.clk.add(time.Minute)
	a, b := uuid.New(), uuid.New()
	h.connect(a, "site.type=edge", "site.id=s1")
	h.connect(b, "site.type=edge", "site.id=s2")
	aFirst, bOwn := h.rec(a).desired, h.rec(b).desired
	if aFirst == "" || bOwn == "" || aFirst == bOwn {
		t.Fatalf("desired hashes a %q b %q: want two different ones", aFirst, bOwn)
	}
	h.status(a, aFirst, applied, "")
	h.status(b, bOwn, applied, "")
	// b reports a's configuration applied.
	h.status(b, aFirst, applied, "")
	if r := h.rec(b); r.reported.Hash != aFirst {
		t.Fatalf("b's reported hash %s, want a's %s", short(r.reported.Hash), short(aFirst))
	}
	// a moves on: a new revision, then one it fails.
	h.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(gatewayBlueprint, "/var/lib/otelcol/", "/srv/", 1))
	h.reload()
	aSecond := h.rec(a).desired
	h.status(a, aSecond, applied, "")
	h.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(gatewayBlueprint, "type: file", "type: nosuch", 1))
	h.reload()
	aBad := h.rec(a).assigned
	h.snd.waitSent(t, a, aBad)
	h.status(a, aBad, failedSt, `unknown type: "nosuch"`)
	if r := h.rec(a); !r.isFailed(aBad) || r.applied != aSecond {
		t.Fatalf("a: failed %v applied %s; want %s failed and %s applied", r.failed, short(r.applied), short(aBad), short(aSecond))
	}
	if r := h.rec(b); r.desired == aFirst || r.reported.Hash != aFirst {
		t.Fatalf("b: desired %s reported %s", short(r.desired), short(r.reported.Hash))
	}

	spec, check := apispectest.Net(t)
	api := admin.New(admin.Deps{AdminToken: "adm", Registry: h.reg, Spec: spec, CheckResponse: check})
	h.e.Routes(api)
	tests := []struct {
		name       string
		uid        uuid.UUID
		hash       string
		status     int
		wantHash   string // the X-Config-Hash answered
		wantInBody string
	}{
		{"a's desired", a, "", 200, h.rec(a).desired, "/srv/s1.json"},
		{"a's applied", a, aSecond, 200, aSecond, "/srv/s1.json"},
		{"a's failed", a, aBad, 200, aBad, "nosuch"},
		{"a's first, now none of its own", a, aFirst, 404, "", "not one of agent"},
		{"b's desired", b, "", 200, h.rec(b).desired, "s2"},
		{"b's applied", b, bOwn, 200, bOwn, "/var/lib/otelcol/s2.json"},
		{"a's configuration that b reports", b, aFirst, 404, "", "not one of agent"},
		{"a's applied, asked of b", b, aSecond, 404, "", "not one of agent"},
		{"a's failed, asked of b", b, aBad, 404, "", "not one of agent"},
		{"b's, asked of a", a, bOwn, 404, "", "not one of agent"},
		{"a hash of nothing", a, strings.Repeat("0", 64), 404, "", "not one of agent"},
		{"an agent the engine does not know", uuid.New(), aFirst, 404, "", "no configured agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/api/v1/agents/" + tt.uid.String() + "/config"
			if tt.hash != "" {
				path += "?hash=" + tt.hash
			}
			rec := rollouttest.Request(api, "GET", path, "adm")
			if rec.Code != tt.status || rec.Header().Get("X-Config-Hash") != tt.wantHash || !strings.Contains(rec.Body.String(), tt.wantInBody) {
				t.Fatalf("GET %s = %d (X-Config-Hash %q) %.300s; want %d (%q) with %q",
					path, rec.Code, rec.Header().Get("X-Config-Hash"), rec.Body, tt.status, tt.wantHash, tt.wantInBody)
			}
			if rec.Code == http.StatusOK && tt.uid == b && strings.Contains(rec.Body.String(), "s1") {
				t.Fatalf("b was answered a's configuration:\n%s", rec.Body)
			}
		})
	}
}
