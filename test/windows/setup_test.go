package windows

import (
	"os"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/agent/sitesetup/sitesetuptest"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
)

// What install.ps1 runs, under Wine as on Windows: `myriarch-updater
// setup` checks the signed artifacts (the collector's archive unpacked and
// its Windows build asked for its version), writes the configurations
// under C:\ProgramData (the token restricted to SYSTEM and
// Administrators, which Wine does not keep), registers and starts the
// updater's service, which connects to a myriarchd on 127.0.0.1; a
// changed setting rewrites its file; --uninstall --purge removes it all.
// In binary mode (without services) the collector is installed and
// "current" made a copy of it: Wine 8 makes no directory junction.
func TestSiteSetupUnderWine(t *testing.T) {
	w := prefix(t)
	srv := servertest.StartServer(t, server.Options{})
	var tok struct{ Token string }
	adminJSON(t, srv, "POST", "/api/v1/tokens", `{"name":"wine-site"}`, &tok)
	key := keyringtest.NewKey(t)
	arts := t.TempDir()
	exe, err := os.ReadFile(shared.exe)
	if err != nil {
		t.Fatal(err)
	}
	sigstore, err := os.ReadFile(w.build(t, "../../cmd/myriarch-sigstore", "myriarch-sigstore.exe"))
	if err != nil {
		t.Fatal(err)
	}
	fake, err := os.ReadFile(w.build(t, "../../agent/install/installtest/testdata/fakecollector", "fakecollector.exe"))
	if err != nil {
		t.Fatal(err)
	}
	fake = append(fake, []byte("\nFAKECOL:0.149.0:ok\n")...)
	sitesetuptest.Write(t, arts, key, "0.149.0", sitesetuptest.Executables{Collector: fake, Supervisor: exe, Updater: exe, Sigstore: sigstore})
	settings := []string{"setup", "--server", srv.OpAMPURL(), "--token", tok.Token, "--site-id", "wine-01", "--site-type", "store",
		"--site-country", "NL", "--site-timezone", "Europe/Amsterdam", "--environment", "test", "--artifacts", winPath(arts),
		"--minisign-key", key.Text}
	setup := func(args ...string) (string, error) {
		t.Helper()
		out, errs, err := w.run(t, shared.exe, append(append([]string{}, settings...), args...)...)
		return out + errs, err
	}
	t.Cleanup(func() { setup("--uninstall", "--purge") })

	out, err := setup("--mode", "container")
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	for _, want := range []string{"checked (SHA-256 and minisign): myriarch-updater_windows_amd64.exe myriarch-sigstore_windows_amd64.exe",
		`wrote C:\ProgramData\Myriarch\token`, `wrote C:\Program Files\Myriarch\bin\myriarch-updater.exe`,
		"registered service myriarch-updater", "started myriarch-updater", "done: "} {
		if !strings.Contains(out, want) {
			t.Errorf("setup said no %q:\n%s", want, out)
		}
	}
	uid := waitFile(t, w.drive(`C:\ProgramData\Myriarch\state\instance_id`))
	if a := waitAgent(t, srv, uid, func(a agentView) bool { return a.Online }); a.Attributes["dev.myriarch.install.mode"] != "container" {
		t.Fatalf("the server sees %+v", a)
	}
	if b, err := os.ReadFile(w.drive(`C:\ProgramData\Myriarch\token`)); err != nil || strings.TrimSpace(string(b)) != tok.Token {
		t.Fatalf("token file: %q %v", b, err)
	}
	// Wine 8 keeps no access list: it reports one made from the Unix
	// permissions (SYSTEM, the user, Everyone reading). The setup says so
	// for the two files holding the token, and a run with the same
	// settings writes those two again, and nothing else.
	for _, secret := range []string{`C:\ProgramData\Myriarch\token`, `C:\ProgramData\Otelcol\supervisor.yaml`} {
		if !strings.Contains(out, "warning: "+secret+": its access list was set to SYSTEM and Administrators only and not kept") {
			t.Errorf("the setup did not say that %s's access list was not kept:\n%s", secret, out)
		}
	}
	out, err = setup("--mode", "container")
	if err != nil || !strings.Contains(out, "done: 2 change(s)") || strings.Count(out, "wrote ") != 2 ||
		!strings.Contains(out, `wrote C:\ProgramData\Myriarch\token`) || !strings.Contains(out, `wrote C:\ProgramData\Otelcol\supervisor.yaml`) {
		t.Fatalf("the same settings again: %v\n%s", err, out)
	}
	if out, err := setup("--mode", "container", "--site-name", "Wine"); err != nil || !strings.Contains(out, `wrote C:\ProgramData\Otelcol\supervisor.yaml`) {
		t.Fatalf("a changed site name: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(w.drive(`C:\ProgramData\Otelcol\supervisor.yaml`)); !strings.Contains(string(b), `site.name: "Wine"`) {
		t.Fatalf("supervisor.yaml after the change:\n%s", b)
	}

	// Binary mode, without the services (there is no Windows build of the
	// Supervisor here): the collector's archive is checked, its Windows
	// build answers its version under Wine, and current is made a copy of
	// the version, since Wine 8 makes no junction.
	out, err = setup("--mode", "binary", "--collector-version", "0.149.0", "--no-start")
	if err != nil || !strings.Contains(out, `installed collector 0.149.0 in C:\Program Files\Myriarch\collector\versions\0.149.0`) ||
		!strings.Contains(out, `switched C:\Program Files\Myriarch\collector\current`) || !strings.Contains(out, `wrote C:\Program Files\Myriarch\bin\opampsupervisor.exe`) {
		t.Fatalf("binary mode under Wine: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(w.drive(`C:\Program Files\Myriarch\collector\current\.myriarch-version`)); err != nil || strings.TrimSpace(string(b)) != "0.149.0" {
		t.Fatalf("current is not a copy of 0.149.0: %q %v", b, err)
	}
	if out, err := setup("--mode", "binary", "--collector-version", "0.149.0", "--no-start"); err != nil || strings.Contains(out, "collector") {
		t.Fatalf("binary mode again: %v\n%s", err, out)
	}

	if out, err := setup("--uninstall", "--purge"); err != nil || !strings.Contains(out, "removed service myriarch-updater") {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	for _, gone := range []string{`C:\Program Files\Myriarch`, `C:\ProgramData\Myriarch`, `C:\ProgramData\Otelcol\supervisor.yaml`} {
		if _, err := os.Lstat(w.drive(gone)); err == nil {
			t.Errorf("%s is still there after --uninstall --purge", gone)
		}
	}
	if out, _, _ := w.run(t, shared.exe, "status", "--config", configPath); !strings.Contains(out, "not installed") {
		t.Errorf("after --uninstall the service is: %s", out)
	}
}
