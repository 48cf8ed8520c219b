package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/offers"
)

const pkgName = "otelcol-contrib"

type testEstate struct {
	t   *testing.T
	dir string
}

func newEstate(t *testing.T) *testEstate {
	dir := t.TempDir()
	for _, d := range []string{"inventory", "fleets", "packages/" + pkgName, "artifacts"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	return &testEstate{t: t, dir: dir}
}

func (e *testEstate) write(rel, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, rel), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// addVersion writes an artifact and its catalog entry; it returns the artifact bytes.
func (e *testEstate) addVersion(version string) []byte {
	data := bytes.Repeat([]byte("collector "+version+"\n"), 1000)
	art := fmt.Sprintf("artifacts/otelcol-contrib_%s_linux_amd64.tar.gz", version)
	e.write(art, string(data))
	sum := sha256.Sum256(data)
	e.write(fmt.Sprintf("packages/%s/%s.yaml", pkgName, version), fmt.Sprintf(`name: %s
version: %s
artifacts:
  - {os: linux, arch: amd64, file: %s, sha256: %s, signature: "untrusted comment: sig %s", executable: otelcol-contrib}
image:
  ref: registry.example/otel/otelcol-contrib@sha256:%064d
`, pkgName, version, art, hex.EncodeToString(sum[:]), version, 7))
	return data
}

func (e *testEstate) fleet(name, target, rollout string) {
	e.write("fleets/"+name+".yaml", fmt.Sprintf("name: %s\npriority: 10\nselector: {site.type: edge}\npackage: %s\ntargetVersion: %s\n%s", name, pkgName, target, rollout))
}

func (ts *testServer) reload() {
	ts.t.Helper()
	if code, body := ts.api("POST", "/api/v1/estate/reload", nil); code != 200 {
		ts.t.Fatalf("reload: %d %s", code, body)
	}
}

// startCollector starts a real opamp-go client that looks like a collector under the supervisor.
func (ts *testServer) startCollector(token, host, version string) (uuid.UUID, client.OpAMPClient) {
	ts.t.Helper()
	uid := newUID(ts.t)
	c := ts.connect(agentSpec{uid: uid, token: token,
		identifying:  kvs("service.name", pkgName, "service.version", version, "service.instance.id", uid.String()),
		nonIdent:     kvs("host.name", host, "os.type", "linux", "host.arch", "amd64", "site.type", "edge"),
		capabilities: baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig,
	})
	return uid, c
}

func setVersion(t *testing.T, c client.OpAMPClient, uid uuid.UUID, host, version string) {
	t.Helper()
	if err := c.SetAgentDescription(&protobufs.AgentDescription{
		IdentifyingAttributes:    kvs("service.name", pkgName, "service.version", version, "service.instance.id", uid.String()),
		NonIdentifyingAttributes: kvs("host.name", host, "os.type", "linux", "host.arch", "amd64", "site.type", "edge"),
	}); err != nil {
		t.Fatal(err)
	}
}

func pairingOf(a admin.Agent) map[string]any {
	b, _ := json.Marshal(a.Pairing)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func offerOf(a admin.Agent) offers.Offer {
	b, _ := json.Marshal(a.Offer)
	var o offers.Offer
	json.Unmarshal(b, &o)
	return o
}

func offerState(want string) func(admin.Agent) bool {
	return func(a admin.Agent) bool { return offerOf(a).State == want }
}

func TestPairingOfferAndRangeDownload(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.0")
	artifact := est.addVersion("0.149.1")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil)

	col, colClient := ts.startCollector(tok.Token, "h1", "0.149.0")
	upd := ts.startUpdater(tok.Token, col, "h1", "binary")
	c := ts.waitAgent(col, "linked collector", func(a admin.Agent) bool { return pairingOf(a)["state"] == "linked" })
	mustEqual(t, "collector.pairing.updater", pairingOf(c)["updater"], any(upd.uid.String()))
	u := ts.waitAgent(upd.uid, "linked updater", func(a admin.Agent) bool { return pairingOf(a)["state"] == "linked" })
	mustEqual(t, "updater.pairing.collector", pairingOf(u)["collector"], any(col.String()))
	code, body := ts.api("GET", "/api/v1/pairings", nil)
	if code != 200 || !strings.Contains(string(body), col.String()) || !strings.Contains(string(body), upd.uid.String()) {
		t.Fatalf("pairings: %d %s", code, body)
	}
	if upd.offerCount() != 0 {
		t.Fatal("offer made without a fleet")
	}

	est.fleet("edge", "0.149.1", "")
	ts.reload()
	offer := upd.waitOffer("0.149.1", func(o *protobufs.PackagesAvailable) bool {
		return o.Packages[pkgName] != nil && o.Packages[pkgName].Version == "0.149.1"
	})
	pa := offer.Packages[pkgName]
	sum := sha256.Sum256(artifact)
	mustEqual(t, "type", pa.Type, protobufs.PackageType_PackageType_Addon)
	mustEqual(t, "content_hash", hex.EncodeToString(pa.File.ContentHash), hex.EncodeToString(sum[:]))
	mustEqual(t, "signature", string(pa.File.Signature), "untrusted comment: sig 0.149.1")
	if len(pa.Hash) != 32 || len(offer.AllPackagesHash) != 32 {
		t.Fatalf("hashes not set: %x %x", pa.Hash, offer.AllPackagesHash)
	}
	wantURL := ts.BaseURL() + "/artifacts/artifacts/otelcol-contrib_0.149.1_linux_amd64.tar.gz"
	mustEqual(t, "download_url", pa.File.DownloadUrl, wantURL)
	c = ts.waitAgent(col, "offered", offerState("offered"))
	if c.Assignment == nil {
		t.Fatal("no assignment")
	}

	// Range download with the agent's own credential; 401 without it.
	get := func(token, rng string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", pa.File.DownloadUrl, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, _ := get("", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("download without credential: %d", resp.StatusCode)
	}
	resp, part := get(tok.Token, "bytes=100-")
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(part, artifact[100:]) {
		t.Fatalf("range download: %d, %d bytes", resp.StatusCode, len(part))
	}
	if resp, full := get(tok.Token, ""); resp.StatusCode != 200 || !bytes.Equal(full, artifact) {
		t.Fatalf("full download: %d", resp.StatusCode)
	}
	if resp, _ := get(tok.Token, ""); resp.StatusCode != 200 {
		t.Fatal("second download failed")
	}
	estFile := ts.BaseURL() + "/artifacts/fleets/edge.yaml"
	req, _ := http.NewRequest("GET", estFile, nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusNotFound {
		t.Fatalf("non-artifact estate file served: %v", r.StatusCode)
	}

	upd.report(offer, pkgName, protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "")
	c = ts.waitAgent(col, "downloading", offerState("downloading"))
	if p := offerOf(c).Progress; p == nil || p.Percent != 42 {
		t.Fatalf("progress = %+v", p)
	}
	upd.report(offer, pkgName, protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "")
	ts.waitAgent(col, "installing", offerState("installing"))
	upd.report(offer, pkgName, protobufs.PackageStatusEnum_PackageStatusEnum_Installed, "")
	ts.waitAgent(col, "installed (not yet up to date)", offerState("installed"))
	setVersion(t, colClient, col, "h1", "v0.149.1")
	// The event history and the offer state are two snapshots; wait for both.
	c = ts.waitAgent(col, "up_to_date", func(a admin.Agent) bool {
		_, ok := hasEvent(a, "offer_up_to_date")
		return ok && offerOf(a).State == "up_to_date"
	})
	for _, typ := range []string{"offer_offered", "offer_downloading", "offer_installing", "offer_installed", "offer_up_to_date"} {
		if _, ok := hasEvent(c, typ); !ok {
			t.Errorf("no %s event", typ)
		}
	}
}

func TestAmbiguityHoldsOffers(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.1")
	est.fleet("edge", "0.149.1", "")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil)
	col, _ := ts.startCollector(tok.Token, "h1", "0.149.0")
	u1 := ts.startUpdater(tok.Token, col, "h1", "binary")
	u1.waitOffer("first updater offered", func(*protobufs.PackagesAvailable) bool { return true })
	u2 := ts.startUpdater(tok.Token, col, "h1", "binary")
	c := ts.waitAgent(col, "held_ambiguous", offerState("held_ambiguous"))
	mustEqual(t, "pairing.state", pairingOf(c)["state"], any("ambiguous"))
	e, ok := hasEvent(c, "pairing_ambiguous")
	if !ok || !strings.Contains(e.Message, u1.uid.String()) || !strings.Contains(e.Message, u2.uid.String()) {
		t.Fatalf("pairing_ambiguous event = %+v", e)
	}
	ts.waitAgent(u2.uid, "updater ambiguous", func(a admin.Agent) bool { return pairingOf(a)["state"] == "ambiguous" })
	if u2.offerCount() != 0 {
		t.Fatal("ambiguous claimant received an offer")
	}
	// An updater of another host is not a claimant.
	other := ts.startUpdater(tok.Token, col, "h2", "binary")
	o := ts.waitAgent(other.uid, "unlinked by host name", func(a admin.Agent) bool { return pairingOf(a)["reason"] == "host name" })
	mustEqual(t, "state", pairingOf(o)["state"], any("unlinked"))
	c, _ = ts.agent(col)
	if n := len(pairingOf(c)["claimants"].([]any)); n != 2 {
		t.Fatalf("claimants = %d, want 2", n)
	}

	u2.stop()
	c = ts.waitAgent(col, "resolved", func(a admin.Agent) bool { _, ok := hasEvent(a, "pairing_resolved"); return ok })
	mustEqual(t, "pairing.updater", pairingOf(c)["updater"], any(u1.uid.String()))
	ts.waitAgent(col, "offered again", offerState("offered"))
}

func TestFailedHashIsNotReofferedUntilRetry(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.1")
	est.fleet("edge", "0.149.1", "")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil)
	col, _ := ts.startCollector(tok.Token, "h1", "0.149.0")
	upd := ts.startUpdater(tok.Token, col, "h1", "binary")
	offer := upd.waitOffer("offer", func(*protobufs.PackagesAvailable) bool { return true })
	upd.report(offer, pkgName, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, "health gate: collector exited")
	c := ts.waitAgent(col, "failed", offerState("failed"))
	if e := offerOf(c).Error; e == nil || !strings.Contains(*e, "health gate") {
		t.Fatalf("failed offer error = %v", e)
	}
	// Reconnecting the updater does not bring the offer back.
	upd.stop()
	n := upd.offerCount()
	ts = ts.restart() // and neither does a server restart
	c, _ = ts.agent(col)
	mustEqual(t, "state after restart", offerOf(c).State, "failed")
	upd2 := ts.startUpdaterWithUID(tok.Token, col, "h1", upd.uid)
	ts.startCollectorWithUID(tok.Token, "h1", "0.149.0", col)
	ts.waitAgent(upd.uid, "updater back online", func(a admin.Agent) bool { return a.Online })
	ts.waitAgent(col, "collector back online", func(a admin.Agent) bool { return a.Online })
	if upd2.offerCount() != 0 || upd.offerCount() != n {
		t.Fatalf("failed hash re-offered")
	}
	code, body := ts.api("POST", "/api/v1/agents/"+col.String()+"/retry", nil)
	if code != 200 {
		t.Fatalf("retry: %d %s", code, body)
	}
	upd2.waitOffer("offer after retry", func(*protobufs.PackagesAvailable) bool { return true })
	ts.waitAgent(col, "offered after retry", offerState("offered"))
}

func (ts *testServer) startUpdaterWithUID(token string, collector uuid.UUID, host string, uid uuid.UUID) *fakeUpdater {
	saved := newUIDOverride
	newUIDOverride = &uid
	defer func() { newUIDOverride = saved }()
	return ts.startUpdater(token, collector, host, "binary")
}

func (ts *testServer) startCollectorWithUID(token, host, version string, uid uuid.UUID) client.OpAMPClient {
	return ts.connect(agentSpec{uid: uid, token: token,
		identifying:  kvs("service.name", pkgName, "service.version", version, "service.instance.id", uid.String()),
		nonIdent:     kvs("host.name", host, "os.type", "linux", "host.arch", "amd64", "site.type", "edge"),
		capabilities: baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig,
	})
}
