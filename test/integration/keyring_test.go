package integration

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/keyring"
	"github.com/myriarch/myriarch/agent/updater"
	ikeyring "github.com/myriarch/myriarch/internal/keyring"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
)

type keyringJSON struct {
	Serial uint64 `json:"serial"`
	Estate uint64 `json:"estate"`
	State  string `json:"state"`
	Error  string `json:"error"`
}

// writeKeyring puts a signed keyring in the estate.
func writeKeyring(t *testing.T, estateDir string, s ikeyring.Signed) {
	t.Helper()
	os.MkdirAll(filepath.Join(estateDir, "trust"), 0o755)
	if err := os.WriteFile(filepath.Join(estateDir, "trust", "keyring.json"), s.Keyring, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(estateDir, "trust", "keyring.json.minisig"), []byte(s.Signature), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runUpdater runs a real updater pinning root, in-process, until the test ends.
func runUpdater(t *testing.T, s *server.Server, token string, root keyringtest.Key) (*updater.Updater, *keyring.Ring) {
	t.Helper()
	dir := t.TempDir()
	cfg := config.NewDefaultConfig()
	cfg.Server.Endpoint = s.OpAMPURL()
	cfg.Server.Token = token
	cfg.Supervisor.StorageDir = filepath.Join(dir, "supervisor")
	cfg.Supervisor.Control = config.ControlService
	cfg.Supervisor.Service = "otelcol-supervisor-test"
	cfg.Collector.Root = filepath.Join(dir, "collector")
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Trust.RootKeys = []string{root.Text}
	os.MkdirAll(cfg.StateDir, 0o700)
	ring, err := keyring.Open(cfg.StateDir, cfg.Trust.RootKeys)
	if err != nil {
		t.Fatal(err)
	}
	u, err := updater.New(cfg, slog.New(slog.DiscardHandler), updater.WithKeyring(ring), updater.WithHeartbeatInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, u)
	return u, ring
}

// The estate's signed keyring reaches real updaters over OpAMP: one that
// pins its root puts it in force (and a newer one when the estate
// changes), one pinning another root refuses it and says why; the server
// shows each updater's state and counts them.
func TestKeyringReachesUpdaters(t *testing.T) {
	root, otherRoot, k1, k2 := keyringtest.NewKey(t), keyringtest.NewKey(t), keyringtest.NewKey(t), keyringtest.NewKey(t)
	estateDir := t.TempDir()
	first := keyringtest.Sign(root, keyringtest.Doc{Serial: 1, Keys: []keyringtest.DocKey{{Key: k1.Text}}}.JSON(t))
	writeKeyring(t, estateDir, first)
	s := servertest.StartServer(t, server.Options{Estate: estateDir})
	code, body := api(t, s, "POST", "/api/v1/tokens", `{"name":"sites"}`)
	if code != 201 {
		t.Fatalf("token: %d %s", code, body)
	}
	var tok struct{ Token string }
	json.Unmarshal(body, &tok)

	good, ring := runUpdater(t, s, tok.Token, root)
	bad, _ := runUpdater(t, s, tok.Token, otherRoot)
	keyringOf := func(uid string, what string, cond func(keyringJSON) bool) keyringJSON {
		t.Helper()
		var k keyringJSON
		var last []byte
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			code, body := api(t, s, "GET", "/api/v1/agents/"+uid, "")
			last = body
			var a struct {
				Keyring *keyringJSON `json:"keyring"`
			}
			if code == 200 && json.Unmarshal(body, &a) == nil && a.Keyring != nil && cond(*a.Keyring) {
				return *a.Keyring
			}
		}
		t.Fatalf("updater %s: timed out waiting for %s; last: %s", uid, what, last)
		return k
	}
	keyringOf(good.InstanceUID().String(), "serial 1 in force", func(k keyringJSON) bool { return k.Serial == 1 && k.Estate == 1 && k.State == "current" })
	if ring.Serial() != 1 {
		t.Fatalf("the host's keyring is at serial %d", ring.Serial())
	}
	k := keyringOf(bad.InstanceUID().String(), "refused", func(k keyringJSON) bool { return k.State == "refused" })
	if k.Serial != 0 || !strings.HasPrefix(k.Error, ikeyring.ID(first.Keyring)+": keyring not signed by a pinned root key") {
		t.Fatalf("refused: %+v", k)
	}
	_, body = api(t, s, "GET", "/api/v1/agents/"+bad.InstanceUID().String(), "")
	if !strings.Contains(string(body), `"keyring_refused"`) || !strings.Contains(string(body), "keyring serial 1 refused: keyring not signed by a pinned root key") {
		t.Fatalf("no keyring_refused event: %s", body)
	}

	// The estate rotates: k2 in, k1 revoked. The updater that has serial 1
	// is given serial 2 without a restart.
	second := keyringtest.Sign(root, keyringtest.Doc{Serial: 2, Keys: []keyringtest.DocKey{{Key: k2.Text}},
		Revoked: []keyringtest.DocRevoked{{KeyID: k1.ID()}}}.JSON(t))
	writeKeyring(t, estateDir, second)
	if code, body := api(t, s, "POST", "/api/v1/estate/reload", ""); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	keyringOf(good.InstanceUID().String(), "serial 2 in force", func(k keyringJSON) bool { return k.Serial == 2 && k.State == "current" })
	keyringOf(bad.InstanceUID().String(), "serial 2 refused", func(k keyringJSON) bool {
		return k.State == "refused" && strings.HasPrefix(k.Error, ikeyring.ID(second.Keyring)+":")
	})
	_, metrics := api(t, s, "GET", "/metrics", "")
	for _, want := range []string{`myriarch_keyring_updaters{state="current"} 1`, `myriarch_keyring_updaters{state="refused"} 1`, `myriarch_keyring_updaters{state="behind"} 0`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// An estate going back to serial 1 is shown, and the host keeps serial 2.
	writeKeyring(t, estateDir, first)
	api(t, s, "POST", "/api/v1/estate/reload", "")
	keyringOf(good.InstanceUID().String(), "ahead of the estate", func(k keyringJSON) bool { return k.Serial == 2 && k.Estate == 1 && k.State == "ahead" })
	if ring.Serial() != 2 {
		t.Fatalf("the host's keyring went back to serial %d", ring.Serial())
	}
}
