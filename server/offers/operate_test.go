package offers

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/credentials"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/rollout/rollouttest"
	"github.com/myriarch/myriarch/server/tokens"
)

// noTokens is a token store without tokens.
type noTokens struct{}

func (noTokens) InsertToken(context.Context, tokens.Token) error      { return nil }
func (noTokens) RevokeToken(context.Context, string, time.Time) error { return nil }
func (noTokens) ListTokens(context.Context) ([]tokens.Token, error)   { return nil, nil }

func states(e *Engine) map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for _, c := range e.collectors {
		out[c.state]++
	}
	return out
}

func addPair(t *testing.T, reg *registry.Registry, host string) (col, upd uuid.UUID) {
	t.Helper()
	cred := rollouttest.Cred
	col, upd = uuid.New(), uuid.New()
	reg.Report(col, cred, &protobufs.AgentToServer{Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig), AgentDescription: &protobufs.AgentDescription{
		IdentifyingAttributes:    []*protobufs.KeyValue{testkit.KV("service.name", "otelcol-contrib"), testkit.KV("service.version", "0.149.0")},
		NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("os.type", "linux"), testkit.KV("host.arch", "amd64"), testkit.KV("site.type", "edge")},
	}}, false, true)
	reg.Report(upd, cred, &protobufs.AgentToServer{Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages), AgentDescription: &protobufs.AgentDescription{
		IdentifyingAttributes:    []*protobufs.KeyValue{testkit.KV("service.name", "myriarch-updater")},
		NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", host), testkit.KV("dev.myriarch.install.mode", "binary"), testkit.KV("dev.myriarch.collector.instance_uid", col.String())},
	}}, false, true)
	return col, upd
}

// failOneOffer has one updater with an offer report it failed ("disk
// full") and returns that updater.
func failOneOffer(t *testing.T, e *Engine) uuid.UUID {
	t.Helper()
	e.mu.Lock()
	var upd uuid.UUID
	var offer *protobufs.PackagesAvailable
	for u, d := range e.desired {
		upd, offer = u, d
		break
	}
	e.mu.Unlock()
	if offer == nil {
		t.Fatal("no offer made")
	}
	pa := offer.Packages["otelcol-contrib"]
	e.OnAgentMessage(upd, &protobufs.AgentToServer{PackageStatuses: &protobufs.PackageStatuses{
		ServerProvidedAllPackagesHash: offer.AllPackagesHash,
		Packages: map[string]*protobufs.PackageStatus{"otelcol-contrib": {Name: "otelcol-contrib", ServerOfferedHash: pa.Hash,
			ServerOfferedVersion: pa.Version, Status: protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, ErrorMessage: "disk full"}},
	}}, &protobufs.ServerToAgent{})
	return upd
}

func TestOperatorPauseHoldsNewOffersUntilResume(t *testing.T) {
	e, _, reg := buildPairs(t, 2)
	defer reg.Close()
	defer e.Close()
	e.SetEstate(testEstate("0.149.1"))
	if err := e.Pause("nope"); err == nil {
		t.Fatal("paused a fleet that does not exist")
	}
	if err := e.Pause("edge"); err != nil {
		t.Fatal(err)
	}
	if s := states(e); s[Offered] != 2 {
		t.Fatalf("offers in flight changed on pause: %v", s)
	}
	col, _ := addPair(t, reg, "host-late")
	e.mu.Lock()
	st, msg := e.collectors[col].state, e.collectors[col].err
	fj := e.fleetJSONLocked(e.fleets["edge"])
	e.mu.Unlock()
	if st != Paused || !strings.Contains(msg, "paused by an operator") {
		t.Fatalf("a collector joining a paused fleet: %s %q", st, msg)
	}
	if fj.Rollout.State != "paused" || fj.Rollout.PausedBy != "operator" {
		t.Fatalf("fleet JSON %+v", fj.Rollout)
	}
	// A new target starts a new rollout, still held by the operator's pause.
	e.SetEstate(testEstate("0.149.2"))
	if s := states(e); s[Paused] != 3 {
		t.Fatalf("a new target during an operator's pause: %v", s)
	}
	if err := e.Resume("edge"); err != nil {
		t.Fatal(err)
	}
	if s := states(e); s[Offered] != 3 {
		t.Fatalf("after resume: %v", s)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if f := e.fleets["edge"]; f.Paused || f.Manual {
		t.Fatalf("still paused after resume: %+v", f.rolloutState)
	}
}

func TestRetryFleetRetriesOnlyFailedMembers(t *testing.T) {
	e, _, reg := buildPairs(t, 3)
	defer reg.Close()
	defer e.Close()
	e.SetEstate(testEstate("0.149.1"))
	failOneOffer(t, e)
	if s := states(e); s[Failed] != 1 || s[Offered] != 2 {
		t.Fatalf("before retry: %v", s)
	}
	if _, err := e.RetryFleet("nope"); err == nil {
		t.Fatal("retried a fleet that does not exist")
	}
	n, err := e.RetryFleet("edge")
	if err != nil || n != 1 {
		t.Fatalf("RetryFleet = %d, %v; want 1", n, err)
	}
	if s := states(e); s[Offered] != 3 {
		t.Fatalf("after retry: %v", s)
	}
}

func TestListingFiltersByFleetAndOfferStateAndSummary(t *testing.T) {
	e, _, reg := buildPairs(t, 3)
	defer reg.Close()
	defer e.Close()
	book, err := credentials.Open(t.Context(), noTokens{})
	if err != nil {
		t.Fatal(err)
	}
	api := admin.New(admin.Deps{AdminToken: "adm", Tokens: book, Registry: reg, Log: slog.New(slog.DiscardHandler)})
	e.Routes(api)
	e.SetEstate(testEstate("0.149.1"))
	get := func(path string) (int, string) {
		rec := rollouttest.Request(api, "GET", path, "adm")
		return rec.Code, rec.Body.String()
	}
	total := func(query string) int {
		t.Helper()
		code, body := get("/api/v1/agents?offset=0&" + query)
		var p struct{ Total int }
		if err := json.Unmarshal([]byte(body), &p); code != 200 || err != nil {
			t.Fatalf("%s: %d %s", query, code, body)
		}
		return p.Total
	}
	for q, want := range map[string]int{"fleet=edge": 3, "fleet=core": 0, "offerState=offered": 3, "offerState=failed": 0,
		"offerState=offered&kind=updater": 0} {
		if got := total(q); got != want {
			t.Errorf("%s: total %d, want %d", q, got, want)
		}
	}
	if code, body := get("/api/v1/agents?offerState=lost"); code != 400 || !strings.Contains(body, `offerState must be one of up_to_date`) {
		t.Errorf("offerState=lost: %d %s", code, body)
	}
	_, body := get("/api/v1/summary")
	var s struct {
		Offers   map[string]int `json:"offers"`
		Pairings map[string]int `json:"pairings"`
	}
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.Offers[Offered] != 3 || s.Pairings["linked"] != 3 || s.Pairings["unlinkedUpdaters"] != 0 {
		t.Fatalf("summary %s (%v)", body, err)
	}
	for q, want := range map[string]string{"state=ambiguous": `"collectors": []`, "state=linked": "linked", "state=x": "state must be one of"} {
		code, body := get("/api/v1/pairings?" + q)
		if !strings.Contains(body, want) || (q == "state=x") != (code == http.StatusBadRequest) {
			t.Errorf("pairings?%s: %d %s", q, code, body)
		}
	}
	for _, path := range []string{"/api/v1/fleets/edge/pause", "/api/v1/fleets/edge/retry", "/api/v1/fleets/none/pause"} {
		rec := rollouttest.Request(api, "POST", path, "adm")
		want := 200
		if strings.Contains(path, "none") {
			want = 404
		}
		if rec.Code != want {
			t.Errorf("POST %s = %d %s", path, rec.Code, rec.Body)
		}
	}
}
