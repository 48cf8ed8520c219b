package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
)

func TestRegistrationAndKinds(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("edge-north", map[string]string{"wave": "1", "region": "north"})
	accepts := baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig
	cases := []struct {
		name     string
		ident    []*protobufs.KeyValue
		non      []*protobufs.KeyValue
		caps     protobufs.AgentCapabilities
		wantKind string
	}{
		{"collector", kvs("service.name", "otelcol-contrib", "service.version", "v0.149.0"), kvs("host.name", "h1", "site.id", "007"), accepts, "collector"},
		{"updater beats accepts-remote-config", kvs("service.name", "myriarch-updater", "service.version", "0.1.0"), kvs("dev.myriarch.install.mode", "binary", "dev.myriarch.collector.instance_uid", "0190a000-0000-7000-8000-000000000001"), accepts, "updater"},
		{"bridge by name", kvs("service.name", "io.opentelemetry.operator-opamp-bridge"), nil, accepts, "bridge"},
		{"bridge by attribute", kvs("service.name", "something"), kvs("opentelemetry.io/opamp.bridge.mode", "operator"), baseCaps, "bridge"},
		{"unknown", kvs("service.name", "other"), nil, baseCaps, "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := ts.forT(t)
			uid := newUID(t)
			ts.connect(agentSpec{uid: uid, token: tok.Token, identifying: tc.ident, nonIdent: tc.non, capabilities: tc.caps})
			a := ts.waitAgent(uid, "kind "+tc.wantKind, func(a admin.Agent) bool { return a.Kind == tc.wantKind && a.Online })
			mustEqual(t, "credential.kind", a.Credential.Kind, "token")
			mustEqual(t, "credential.id", a.Credential.ID, tok.ID)
			mustEqual(t, "credential.name", a.Credential.Name, "edge-north")
			mustEqual(t, "labels.wave", a.Attributes["labels.wave"], "1")
			mustEqual(t, "labels.region", a.Labels["region"], "north")
			if _, ok := hasEvent(a, "registered"); !ok {
				t.Fatalf("no registered event: %+v", a.Events)
			}
			if tc.wantKind == "collector" {
				mustEqual(t, "service.version without v", a.Identifying["service.version"], "0.149.0")
				mustEqual(t, "site.id", a.Attributes["site.id"], "007")
				if !strings.Contains(strings.Join(a.Capabilities, ","), "AcceptsRemoteConfig") {
					t.Fatalf("capabilities = %v", a.Capabilities)
				}
			}
			if tc.wantKind == "updater" {
				if a.Updater == nil || a.Updater.InstallMode == nil || *a.Updater.InstallMode != "binary" ||
					a.Updater.CollectorInstanceUID == nil || *a.Updater.CollectorInstanceUID != "0190a000-0000-7000-8000-000000000001" {
					t.Fatalf("updater fields = %+v", a.Updater)
				}
				if a.Updater.ImageVersion != nil {
					t.Fatalf("imageVersion should be null when not reported")
				}
			} else if a.Updater != nil {
				t.Fatalf("non-updater has updater fields")
			}
		})
	}
	code, body := ts.api("GET", "/api/v1/agents?kind=collector", nil)
	var list struct{ Agents []admin.Agent }
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list.Agents) != 1 {
		t.Fatalf("list kind=collector: %d %s", code, body)
	}
	if code, _ := ts.api("GET", "/api/v1/agents?kind=bogus", nil); code != http.StatusBadRequest {
		t.Fatalf("bad kind filter: %d", code)
	}
	if code, body := ts.api("GET", "/api/v1/agents/"+newUID(t).String(), nil); code != http.StatusNotFound || !strings.Contains(string(body), "error") {
		t.Fatalf("unknown uid: %d %s", code, body)
	}
}

func TestPlainHTTPTransport(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("http", nil)
	uid := newUID(t)
	ts.connect(agentSpec{uid: uid, token: tok.Token, http: true, identifying: kvs("service.name", "otelcol"),
		capabilities: baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig})
	a := ts.waitAgent(uid, "online collector over HTTP", func(a admin.Agent) bool { return a.Kind == "collector" && a.Online })
	mustEqual(t, "service.name", a.Identifying["service.name"], "otelcol")
}

func TestLabelSpoofingAndLimits(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("spoof", map[string]string{"wave": "2"})
	uid := newUID(t)
	non := kvs("labels.wave", "1", "site.type", "edge", "labels.channel", "beta")
	for i := range 300 {
		non = append(non, kvs(fmt.Sprintf("extra.%03d", i), "x")...)
	}
	ts.connect(agentSpec{uid: uid, token: tok.Token, identifying: kvs("service.name", "otelcol"), nonIdent: non})
	a := ts.waitAgent(uid, "warning events", func(a admin.Agent) bool {
		_, l := hasEvent(a, "label_attribute_dropped")
		_, m := hasEvent(a, "attribute_limit")
		return l && m
	})
	mustEqual(t, "labels.wave comes from the token", a.Attributes["labels.wave"], "2")
	if _, ok := a.Attributes["labels.channel"]; ok {
		t.Fatal("agent set its own label")
	}
	if _, ok := a.NonIdentifying["labels.wave"]; ok {
		t.Fatal("labels.* kept in nonIdentifying")
	}
	e, _ := hasEvent(a, "label_attribute_dropped")
	if !strings.Contains(e.Message, "labels.wave") || !strings.Contains(e.Message, "labels.channel") {
		t.Fatalf("label event = %q", e.Message)
	}
	e, _ = hasEvent(a, "attribute_limit")
	if !strings.Contains(e.Message, "47 non-identifying") {
		t.Fatalf("limit event = %q", e.Message)
	}
}

func TestTokenAPI(t *testing.T) {
	ts := startServer(t)
	labels := map[string]string{"bad key": strings.Repeat("v", 300), "a=b": "x"}
	for i := range 20 {
		labels[fmt.Sprintf("k%d", i)] = "v"
	}
	code, body := ts.api("POST", "/api/v1/tokens", map[string]any{"name": "x", "labels": labels})
	if code != http.StatusBadRequest {
		t.Fatalf("invalid labels: %d %s", code, body)
	}
	var e admin.ErrorBody
	_ = json.Unmarshal(body, &e)
	joined := strings.Join(e.Details, "\n")
	for _, want := range []string{"22 labels, at most 20", "whitespace", "'='", "300 characters"} {
		if !strings.Contains(joined, want) {
			t.Errorf("details lack %q:\n%s", want, joined)
		}
	}
	tok := ts.createToken("ok", map[string]string{"wave": "1"})
	if code, _ := ts.api("POST", "/api/v1/tokens", map[string]any{"name": "ok"}); code != http.StatusConflict {
		t.Fatalf("duplicate name: %d", code)
	}
	code, body = ts.api("GET", "/api/v1/tokens", nil)
	if code != 200 || strings.Contains(string(body), tok.Token) || !strings.Contains(string(body), tok.ID) {
		t.Fatalf("list leaks secrets or misses token: %s", body)
	}
	data, _ := os.ReadFile(filepath.Join(ts.opts.DataDir, "myriarch.db"))
	if strings.Contains(string(data), tok.Token) {
		t.Fatal("secret stored in plain text")
	}
	// The admin API itself requires the admin token.
	resp, err := http.Get("http://" + ts.AdminAddr().String() + "/api/v1/tokens")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("admin without token: %v", resp.StatusCode)
	}
	st, _ := os.Stat(filepath.Join(ts.opts.DataDir, "admin.token"))
	mustEqual(t, "admin.token mode", st.Mode().Perm(), os.FileMode(0o600))
}

func opampStatus(t *testing.T, ts *testServer, token string) int {
	req, _ := http.NewRequest("GET", "http://"+ts.OpAMPAddr().String()+"/v1/opamp", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestUnauthorizedAndRevocation(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("rev", nil)
	mustEqual(t, "no token", opampStatus(t, ts, ""), http.StatusUnauthorized)
	mustEqual(t, "garbage token", opampStatus(t, ts, "myr_000000000000_nope"), http.StatusUnauthorized)

	uid := newUID(t)
	ts.connect(agentSpec{uid: uid, token: tok.Token, identifying: kvs("service.name", "otelcol")})
	ts.waitAgent(uid, "online", func(a admin.Agent) bool { return a.Online })

	code, body := ts.api("DELETE", "/api/v1/tokens/"+tok.ID, nil)
	if code != 200 || !strings.Contains(string(body), `"disconnected": 1`) {
		t.Fatalf("revoke: %d %s", code, body)
	}
	ts.waitAgent(uid, "offline after revoke", func(a admin.Agent) bool { return !a.Online })
	mustEqual(t, "revoked token", opampStatus(t, ts, tok.Token), http.StatusUnauthorized)
	if code, _ := ts.api("DELETE", "/api/v1/tokens/nope", nil); code != http.StatusNotFound {
		t.Fatalf("revoke unknown: %d", code)
	}
	// Revocation survives a restart.
	ts = ts.restart()
	mustEqual(t, "revoked token after restart", opampStatus(t, ts, tok.Token), http.StatusUnauthorized)
}

func TestIdentityConflict(t *testing.T) {
	ts := startServer(t)
	owner := ts.createToken("owner", nil)
	thief := ts.createToken("thief", nil)
	uid := newUID(t)
	ts.connect(agentSpec{uid: uid, token: owner.Token, identifying: kvs("service.name", "otelcol", "service.version", "1.0.0")})
	ts.waitAgent(uid, "online", func(a admin.Agent) bool { return a.Online })

	var refused atomic.Bool
	ts.connect(agentSpec{uid: uid, token: thief.Token, identifying: kvs("service.name", "evil", "service.version", "6.6.6"),
		onError: func(*protobufs.ServerErrorResponse) { refused.Store(true) }})
	a := ts.waitAgent(uid, "identity_conflict event", func(a admin.Agent) bool { _, ok := hasEvent(a, "identity_conflict"); return ok })
	e, _ := hasEvent(a, "identity_conflict")
	if !strings.Contains(e.Message, thief.ID) || strings.Contains(e.Message, thief.Token) {
		t.Fatalf("event message = %q", e.Message)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !refused.Load() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !refused.Load() {
		t.Fatal("offending client got no error_response")
	}
	a, _ = ts.agent(uid)
	mustEqual(t, "binding kept", a.Credential.ID, owner.ID)
	mustEqual(t, "description kept", a.Identifying["service.name"], "otelcol")
	mustEqual(t, "still online", a.Online, true)
}

func TestRestartPersistence(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("persist", map[string]string{"wave": "3"})
	uid := newUID(t)
	c := ts.connect(agentSpec{uid: uid, token: tok.Token, identifying: kvs("service.name", "otelcol", "service.version", "1.2.3"),
		nonIdent: kvs("site.id", "0042", "labels.x", "y"), capabilities: baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig})
	before := ts.waitAgent(uid, "registered with events", func(a admin.Agent) bool {
		_, ok := hasEvent(a, "label_attribute_dropped")
		return a.Kind == "collector" && ok
	})
	_ = c.Stop(t.Context())
	ts = ts.restart()
	after, ok := ts.agent(uid)
	if !ok {
		t.Fatal("agent lost across restart")
	}
	mustEqual(t, "online after restart", after.Online, false)
	mustEqual(t, "kind", after.Kind, "collector")
	mustEqual(t, "site.id", after.Attributes["site.id"], "0042")
	mustEqual(t, "labels.wave", after.Attributes["labels.wave"], "3")
	mustEqual(t, "credential", after.Credential.ID, before.Credential.ID)
	mustEqual(t, "events", len(after.Events), len(before.Events))
	mustEqual(t, "firstSeen", after.FirstSeen.Equal(before.FirstSeen), true)
	// The token still works and the agent reconnects with its binding.
	ts.connect(agentSpec{uid: uid, token: tok.Token, identifying: kvs("service.name", "otelcol", "service.version", "1.2.4"),
		capabilities: baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig})
	ts.waitAgent(uid, "reconnected with the new version", func(a admin.Agent) bool {
		return a.Online && a.Identifying["service.version"] == "1.2.4"
	})
}

func TestEstateInventoryReload(t *testing.T) {
	estateDir := t.TempDir()
	inv := filepath.Join(estateDir, "inventory")
	os.MkdirAll(inv, 0o755)
	ts := startServer(t, func(o *server.Options) { o.Estate = estateDir })
	tok := ts.createToken("north", map[string]string{"wave": "1", "region": "north"})
	uid := newUID(t)
	ts.connect(agentSpec{uid: uid, token: tok.Token, identifying: kvs("service.name", "otelcol")})
	ts.waitAgent(uid, "online", func(a admin.Agent) bool { return a.Online })

	os.WriteFile(filepath.Join(inv, "labels.yaml"), []byte(fmt.Sprintf(
		"- token: north\n  labels: {wave: \"2\", channel: stable}\n- instanceUid: %s\n  labels: {channel: beta}\n", uid)), 0o644)
	if code, body := ts.api("POST", "/api/v1/estate/reload", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	a, _ := ts.agent(uid)
	mustEqual(t, "inventory by token wins over token labels", a.Attributes["labels.wave"], "2")
	mustEqual(t, "inventory by uid wins over by token", a.Attributes["labels.channel"], "beta")
	mustEqual(t, "token label kept", a.Attributes["labels.region"], "north")

	// A bad file: reported with file and line; the previous estate stays.
	os.WriteFile(filepath.Join(inv, "zbad.yaml"), []byte("- instanceUid: not-a-uuid\n  labels: {a: b}\n- token: x\n  labelz: {}\n"), 0o644)
	code, body := ts.api("POST", "/api/v1/estate/reload", nil)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("bad reload: %d %s", code, body)
	}
	for _, want := range []string{`"file": "inventory/zbad.yaml"`, `"line": 1`, "not a UUID", `"line": 4`, "labelz"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("reload error lacks %q:\n%s", want, body)
		}
	}
	a, _ = ts.agent(uid)
	mustEqual(t, "previous estate in force", a.Attributes["labels.channel"], "beta")
}

func TestMetrics(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("m", nil)
	uid := newUID(t)
	ts.connect(agentSpec{uid: uid, token: tok.Token, identifying: kvs("service.name", "otelcol"),
		capabilities: baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig})
	ts.waitAgent(uid, "online", func(a admin.Agent) bool { return a.Online })
	opampStatus(t, ts, "") // one reject
	resp, err := http.Get("http://" + ts.AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := new(strings.Builder)
	_, _ = fmt.Fprint(buf, "")
	data := make([]byte, 1<<20)
	n, _ := readAll(resp, data)
	text := string(data[:n])
	for _, want := range []string{`myriarch_agents_connected{kind="collector"} 1`, `myriarch_opamp_rejects_total{reason="unauthorized"} 1`, "myriarch_opamp_messages_total"} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func readAll(resp *http.Response, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := resp.Body.Read(buf[n:])
		n += m
		if err != nil {
			return n, nil
		}
	}
	return n, nil
}
