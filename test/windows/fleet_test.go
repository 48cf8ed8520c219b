package windows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/agent/sitesetup"
	"github.com/myriarch/myriarch/agent/sitesetup/sitesetuptest"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

// A site as install.ps1 leaves it in binary mode, under Wine as on
// Windows, with the real upstream programs: the updater's service and the
// upstream OpAMP Supervisor's (its Windows build, from the peers build),
// which runs an ocb-built collector from C:\Program Files. Both connect to
// a myriarchd on 127.0.0.1 and are paired. The fleet's next version is
// installed as on Windows (downloaded, verified, unpacked, current
// switched — a copy, since Wine 8 makes no junction —, the Supervisor's
// service restarted, the health gate passed); then a broken release is
// rolled back to it.
//
// Wine 8 cannot run the Supervisor's collector: the Supervisor stops the
// collector it starts for its bootstrap with GenerateConsoleCtrlEvent
// (CTRL_BREAK to the collector's process group), which Wine 8 refuses
// ("Invalid handle" in a service), so the Supervisor's service fails to
// start (and, before that, every collector start waits 10 s in
// StartServiceCtrlDispatcher, which under Wine waits for the control pipe
// of the service last started where Windows fails at once). Under Wine 8
// the test checks the site up to there — the setup installed the real
// programs, the updater's service connects, the Supervisor's service ran
// the collector's bootstrap — and that it ends precisely so; under another
// Wine that refusal fails the test, to run the whole flow.
func TestFleetUnderWine(t *testing.T) {
	w := prefix(t)
	peers := windowsPeers(t)
	key := keyringtest.NewKey(t)
	estate := t.TempDir()
	exes := map[string][]byte{}
	for _, c := range peers.Collectors {
		exe, err := os.ReadFile(c.Executable)
		if err != nil {
			t.Fatal(err)
		}
		exes[c.Version] = exe
		publishWindows(t, estate, c.Version, exe, key)
	}
	setFleet := func(version string) {
		t.Helper()
		y := fmt.Sprintf("name: wine\npriority: 10\nselector: {\"site.type\": \"store\"}\npackage: %s\ntargetVersion: %s\n",
			sitesetup.CollectorPackage, version)
		if err := os.WriteFile(filepath.Join(estate, "fleets", "wine.yaml"), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setFleet(peerbuild.VersionM1)
	srv := servertest.StartServer(t, server.Options{Estate: estate})
	var tok struct{ Token string }
	adminJSON(t, srv, "POST", "/api/v1/tokens", `{"name":"wine-fleet"}`, &tok)

	arts := t.TempDir()
	sup, err := os.ReadFile(peers.Supervisor)
	if err != nil {
		t.Fatal(err)
	}
	upd, err := os.ReadFile(shared.exe)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := os.ReadFile(w.build(t, "../../cmd/myriarch-sigstore", "myriarch-sigstore.exe"))
	if err != nil {
		t.Fatal(err)
	}
	sitesetuptest.Write(t, arts, key, peerbuild.VersionM1, sitesetuptest.Executables{
		Collector: exes[peerbuild.VersionM1], Supervisor: sup, Updater: upd, Sigstore: sig})
	setup := func(args ...string) (string, error) {
		t.Helper()
		out, errs, err := w.runWith(t, 3*time.Minute, nil, shared.exe, append([]string{"setup", "--server", srv.OpAMPURL(), "--token", tok.Token,
			"--site-id", "wine-fleet", "--site-type", "store", "--site-country", "NL", "--site-timezone", "Europe/Amsterdam",
			"--environment", "test", "--artifacts", winPath(arts), "--minisign-key", key.Text}, args...)...)
		return out + errs, err
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the services' Event Log reports:\n%s", tail(w.serviceLog(), 8000))
		}
		// The collector the Supervisor could not stop (under Wine 8)
		// is ended first, as it would keep its files.
		w.run(t, "taskkill", "/F", "/IM", sitesetup.CollectorExe)
		if out, err := setup("--uninstall", "--purge"); err != nil {
			t.Errorf("uninstall: %v\n%s", err, out)
		}
	})
	// The setup waits for each service to run and reports each that does
	// not: under Wine 8 the Supervisor's (see above).
	out, err := setup("--mode", "binary", "--collector-version", peerbuild.VersionM1)
	supervisorFailed := err != nil && strings.Contains(out, "service "+sitesetup.SupervisorService+" stopped as it started")
	if (err != nil && !supervisorFailed) || (err == nil && !strings.Contains(out, "started "+sitesetup.SupervisorService)) ||
		!strings.Contains(out, "started "+sitesetup.UpdaterService) {
		t.Fatalf("setup in binary mode: %v\n%s", err, out)
	}

	colUID := waitStateUID(t, w.drive(`C:\ProgramData\Otelcol\Supervisor\persistent_state.yaml`))
	updUID := waitFile(t, w.drive(`C:\ProgramData\Myriarch\state\instance_id`))
	if a := waitFleetAgent(t, srv, updUID, time.Minute, "the updater online", func(a fleetAgent) bool { return a.Online }); a.Attributes["dev.myriarch.install.mode"] != "binary" {
		t.Fatalf("the updater: %+v", a)
	}
	if refused := supervisorStopRefused(t, w, srv, colUID); refused != "" {
		wineVersion, _, _ := w.run(t, "--version")
		if !strings.HasPrefix(strings.TrimSpace(wineVersion), "wine-8.") {
			t.Fatalf("%s still refuses the Supervisor's stop of its collector: %s", strings.TrimSpace(wineVersion), refused)
		}
		if !strings.Contains(w.serviceLog(), "Agent process started") {
			t.Fatalf("the Supervisor's service did not start the collector's bootstrap:\n%s", tail(w.serviceLog(), 4000))
		}
		t.Logf("Wine 8 refuses the Supervisor's stop of its collector, as known; the site up to there works: %s", refused)
		return
	}
	if supervisorFailed {
		t.Fatalf("the setup said the Supervisor's service did not start, and it did:\n%s", out)
	}
	col := waitFleetAgent(t, srv, colUID, 3*time.Minute, "the collector m.1, paired with its updater", func(a fleetAgent) bool {
		return a.Online && a.Identifying["service.version"] == peerbuild.VersionM1 && a.Pairing.State == "linked"
	})
	t.Logf("collector %s on %s under the upstream Supervisor, paired", col.InstanceUID, peerbuild.VersionM1)

	start := time.Now()
	setFleet(peerbuild.VersionM2)
	if err := srv.ReloadEstate(); err != nil {
		t.Fatal(err)
	}
	waitFleetAgent(t, srv, colUID, 4*time.Minute, "the collector on m.2, the offer done", func(a fleetAgent) bool {
		return a.Online && a.Identifying["service.version"] == peerbuild.VersionM2 && a.Offer != nil && a.Offer.State == "up_to_date"
	})
	t.Logf("fleet change → m.2 runs: %v", time.Since(start).Round(time.Second))
	if b, err := os.ReadFile(w.drive(`C:\Program Files\Myriarch\collector\current\.myriarch-version`)); err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), peerbuild.VersionM2) {
		t.Fatalf("current after the install: %q %v", b, err)
	}

	start = time.Now()
	setFleet(peerbuild.VersionBroken)
	if err := srv.ReloadEstate(); err != nil {
		t.Fatal(err)
	}
	failed := waitFleetAgent(t, srv, colUID, 4*time.Minute, "the broken release failed", func(a fleetAgent) bool {
		return a.Offer != nil && a.Offer.State == "failed"
	})
	if failed.Offer.Error == nil || *failed.Offer.Error == "" {
		t.Fatal("the failed offer has no reason")
	}
	t.Logf("broken release refused after %v: %s", time.Since(start).Round(time.Second), *failed.Offer.Error)
	waitFleetAgent(t, srv, colUID, 2*time.Minute, "back on m.2", func(a fleetAgent) bool {
		return a.Online && a.Identifying["service.version"] == peerbuild.VersionM2
	})
	if b, err := os.ReadFile(w.drive(`C:\Program Files\Myriarch\collector\current\.myriarch-version`)); err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), peerbuild.VersionM2) {
		t.Fatalf("current after the rollback: %q %v", b, err)
	}
}

// stopRefusedRe is the Supervisor's report of a failed start because its
// stop of the collector was refused.
var stopRefusedRe = regexp.MustCompile(`failed to start service: .*sendShutdownSignal to PID '\d+': [^"]*`)

// supervisorStopRefused waits until the collector is online or the
// Supervisor's service reports that its stop of the collector was refused,
// and returns that report ("" when the collector came online).
func supervisorStopRefused(t *testing.T, w *wine, s *server.Server, colUID string) string {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if m := stopRefusedRe.FindString(w.serviceLog()); m != "" {
			return m
		}
		var a fleetAgent
		if code, data := servertest.API(t, s, "GET", "/api/v1/agents/"+colUID, ""); code == 200 && json.Unmarshal(data, &a) == nil && a.Online {
			return ""
		}
	}
	t.Fatalf("neither the collector came online nor the Supervisor said why not within 3 minutes:\n%s", tail(w.serviceLog(), 4000))
	return ""
}

// windowsPeers are the upstream Supervisor and the ocb collectors built
// for Windows (make peers builds them; a cold build here takes minutes).
func windowsPeers(t *testing.T) *peerbuild.Peers {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	p, err := peerbuild.EnsureWith(ctx, slog.New(slog.NewTextHandler(testWriter{t}, nil)), peerbuild.Options{GOOS: "windows"})
	if err != nil {
		t.Fatalf("the peers for Windows: %v", err)
	}
	return p
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// publishWindows puts a collector release for Windows into the estate: a
// zip holding the site's collector executable, signed with key.
func publishWindows(t *testing.T, estate, version string, exe []byte, key keyringtest.Key) {
	t.Helper()
	zipped := sitesetuptest.CollectorZip(t, exe)
	name := "otelcol_" + version + "_windows_amd64.zip"
	for _, d := range []string{"artifacts", filepath.Join("packages", sitesetup.CollectorPackage), "fleets"} {
		if err := os.MkdirAll(filepath.Join(estate, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(estate, "artifacts", name), zipped, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(zipped)
	sig := minisign.SignWithComments(key.Private, zipped, "collector release", name)
	y := fmt.Sprintf("name: %s\nversion: %s\nartifacts:\n  - os: windows\n    arch: amd64\n    file: artifacts/%s\n    sha256: %s\n    executable: %s\n    signature: |\n",
		sitesetup.CollectorPackage, version, name, hex.EncodeToString(sum[:]), sitesetup.CollectorExe)
	for _, l := range strings.Split(strings.TrimRight(string(sig), "\n"), "\n") {
		y += "      " + l + "\n"
	}
	if err := os.WriteFile(filepath.Join(estate, "packages", sitesetup.CollectorPackage, version+".yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
}

var instanceIDRe = regexp.MustCompile(`(?m)^instance_id:\s*"?([0-9a-fA-F-]{36})"?`)

// waitStateUID waits for the Supervisor's persistent state and returns
// the collector's instance UID from it (the Supervisor rewrites the file
// in place as it starts: a read then may find it empty).
func waitStateUID(t *testing.T, path string) string {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			if m := instanceIDRe.FindSubmatch(b); m != nil {
				return string(m[1])
			}
		}
	}
	t.Fatalf("%s holds no instance_id", path)
	return ""
}

// fleetAgent is what the tests read of an agent.
type fleetAgent struct {
	InstanceUID string            `json:"instanceUid"`
	Online      bool              `json:"online"`
	Identifying map[string]string `json:"identifying"`
	Attributes  map[string]string `json:"attributes"`
	Pairing     struct {
		State string `json:"state"`
	} `json:"pairing"`
	Offer *struct {
		Version string  `json:"version"`
		State   string  `json:"state"`
		Error   *string `json:"error"`
	} `json:"offer"`
}

func waitFleetAgent(t *testing.T, s *server.Server, uid string, within time.Duration, what string, cond func(fleetAgent) bool) fleetAgent {
	t.Helper()
	var a fleetAgent
	var last []byte
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		a = fleetAgent{}
		code, data := servertest.API(t, s, "GET", "/api/v1/agents/"+uid, "")
		last = data
		if code == 200 && json.Unmarshal(data, &a) == nil && cond(a) {
			return a
		}
	}
	t.Fatalf("agent %s: %s: not within %v; last:\n%s", uid, what, within, last)
	return a
}
