package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
	"github.com/myriarch/myriarch/test/peers/peerrun"
)

// env is one test's world: a server with an estate, a token, a signing key and a site.
type env struct {
	t       *testing.T
	root    string
	estate  string
	srv     *site.Server
	tokenID string
	token   string
	pub     minisign.PublicKey
	key     minisign.PrivateKey
	site    *site.Site
	updater *peerrun.Process
	colUID  string
	// Set by configure: the fleet's Blueprint and where its data goes.
	sink     *site.Sink
	otlpAddr string // the collector's OTLP/HTTP receiver
	config   string // the fleet's config: block
	// providers and updaterEnv, set before install, configure the
	// updater's providers and its environment.
	providers  map[string]any
	updaterEnv []string
	// ownTelemetry and collectorEnv, set before install: see site.Options.
	ownTelemetry bool
	collectorEnv map[string]string
	// sigstore, set before install, is the updater's trust.sigstore.
	sigstore map[string]any
}

var siteAttrs = map[string]string{
	"site.type": "edge", "site.id": "007", "site.name": "Edge site 7", "site.country": "DE",
	"site.region": "north", "site.timezone": "Europe/Amsterdam", "deployment.environment.name": "production",
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, root: t.TempDir()}
	e.estate = filepath.Join(e.root, "estate")
	for _, d := range []string{"inventory", "fleets", "packages", "artifacts"} {
		os.MkdirAll(filepath.Join(e.estate, d), 0o755)
	}
	var err error
	e.pub, e.key, err = minisign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{peerbuild.VersionM1, peerbuild.VersionM2, peerbuild.VersionBroken} {
		c, _ := peers.Collector(v)
		if err := site.Publish(e.estate, c, e.key); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(e.root, "server"), 0o700)
	e.srv, err = site.StartServer(bins.Myriarchd, filepath.Join(e.root, "server"), e.estate, filepath.Join(e.root, "myriarchd.log"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.srv.Stop()
		if t.Failed() {
			dumpLogs(t, e.root)
		}
	})
	e.tokenID, e.token, err = e.srv.CreateToken("edge-north", map[string]string{"wave": "1", "region": "north"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// install lays out the site with collector version v and starts the updater,
// which runs the supervisor (process control).
func (e *env) install(v string) {
	e.t.Helper()
	pubText, _ := e.pub.MarshalText()
	var err error
	e.site, err = site.New(filepath.Join(e.root, "host"), site.Options{
		Peers: peers, Initial: v, ServerURL: e.srv.OpAMPURL(), Token: e.token,
		Attributes: siteAttrs, MinisignPubKey: string(pubText), HealthWindow: 5 * time.Second, Providers: e.providers,
		OwnTelemetry: e.ownTelemetry, CollectorEnv: e.collectorEnv, Sigstore: e.sigstore,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.startUpdater(e.updaterEnv)
	e.colUID, err = e.site.WaitCollectorUID(60 * time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) startUpdater(env []string) {
	e.t.Helper()
	p, err := e.site.StartUpdater(bins.Updater, env)
	if err != nil {
		e.t.Fatal(err)
	}
	e.updater = p
	e.t.Cleanup(func() { p.Stop(20 * time.Second) })
}

// waitCollector waits until the collector agent satisfies cond.
func (e *env) waitCollector(what string, timeout time.Duration, cond func(site.Agent) bool) site.Agent {
	e.t.Helper()
	a, err := e.srv.WaitAgent(e.colUID, timeout, cond)
	if err != nil {
		e.t.Fatalf("collector %s: waiting for %s: %v", e.colUID, what, err)
	}
	return a
}

// updaterUID finds the updater agent of this site.
func (e *env) updaterAgent(timeout time.Duration) site.Agent {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		list, _ := e.srv.Agents("updater")
		for _, a := range list {
			if a.Online {
				return a
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.t.Fatal("no online updater")
	return site.Agent{}
}

func (e *env) setTarget(version string) {
	e.t.Helper()
	if err := site.SetFleet(e.estate, "edge", version, map[string]string{"site.type": "edge"}, e.config); err != nil {
		e.t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil {
		e.t.Fatal(err)
	}
}

func dumpLogs(t *testing.T, root string) {
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !(strings.HasSuffix(p, ".log") || filepath.Base(p) == "effective.yaml") {
			return nil
		}
		data, _ := os.ReadFile(p)
		if len(data) > 6000 {
			data = data[len(data)-6000:]
		}
		t.Logf("==== %s (tail) ====\n%s", p, data)
		return nil
	})
}

// configure gives the fleet a Blueprint (call before install): an
// OTLP/HTTP receiver on a free port, exported to a sink by site id.
func (e *env) configure() {
	e.t.Helper()
	var err error
	if e.sink, err = site.StartSink(e.t.TempDir()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { e.sink.Close() })
	if e.otlpAddr, err = site.FreeAddr(); err != nil {
		e.t.Fatal(err)
	}
	e.writeBlueprint("otlphttp")
	e.config = site.GatewayConfig
	e.setTarget(peerbuild.VersionM1)
}

func (e *env) writeBlueprint(exporterType string) {
	e.t.Helper()
	if err := site.WriteGatewayBlueprint(e.estate, e.otlpAddr, exporterType, e.sink.Addr); err != nil {
		e.t.Fatal(err)
	}
}

// sendLog sends a log record to the collector until the sink has it under
// the site's id (the receiver starts with the configuration).
func (e *env) waitLogFlows(text string, timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = site.SendLog(e.otlpAddr, text); err == nil {
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				if e.sink.Has(siteAttrs["site.id"], text) {
					return
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.t.Fatalf("log %q did not reach the sink under site %s within %v (last send: %v)", text, siteAttrs["site.id"], timeout, err)
}
