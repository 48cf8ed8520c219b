package windows

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
)

// The updater's Windows build as a service of Wine's service manager:
// install registers it (stopped), start runs `run` — it connects to a
// myriarchd on 127.0.0.1 and reports itself as a Windows updater, with the
// instance UID it keeps under C:\ProgramData\Myriarch —, stop ends it (the
// server sees it go), uninstall removes it; twice, the second round after
// the first's uninstall, as an operator would reinstall.
func TestServiceLifecycleUnderWine(t *testing.T) {
	w := prefix(t)
	srv := servertest.StartServer(t, server.Options{})
	var tok struct{ Token string }
	adminJSON(t, srv, "POST", "/api/v1/tokens", `{"name":"wine"}`, &tok)
	cfg := fmt.Sprintf("server:\n  endpoint: %s\n  token: %s\nstate_dir: C:\\ProgramData\\Myriarch\\state\n", srv.OpAMPURL(), tok.Token)
	if err := os.MkdirAll(filepath.Dir(w.drive(configPath)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.drive(configPath), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.run(t, shared.exe, "uninstall", "--config", configPath) })
	do := func(args ...string) string {
		t.Helper()
		out, errs, err := w.run(t, shared.exe, append(args, "--config", configPath)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, out, errs)
		}
		return out + errs
	}
	state := func() string {
		t.Helper()
		out, _, _ := w.run(t, shared.exe, "status", "--config", configPath)
		line, _, _ := strings.Cut(out, "\n")
		return strings.TrimSpace(strings.TrimPrefix(line, "service"))
	}
	for round := 1; round <= 2; round++ {
		if out := do("install"); !strings.Contains(out, "install done (windows-service)") {
			t.Fatalf("round %d: install said %q", round, out)
		}
		if got := state(); got != "stopped (windows-service)" {
			t.Fatalf("round %d: after install the service is %q", round, got)
		}
		do("start")
		if got := state(); got != "running (windows-service)" {
			t.Fatalf("round %d: after start the service is %q", round, got)
		}
		uid := waitFile(t, w.drive(`C:\ProgramData\Myriarch\state\instance_id`))
		a := waitAgent(t, srv, uid, func(a agentView) bool { return a.Online })
		if a.Kind != "updater" || a.Attributes["os.type"] != "windows" || a.Attributes["dev.myriarch.install.mode"] != "binary" {
			t.Fatalf("round %d: the server sees %+v", round, a)
		}
		if round == 1 {
			checkEventLog(t, w)
		}
		do("stop")
		if got := state(); got != "stopped (windows-service)" {
			t.Fatalf("round %d: after stop the service is %q", round, got)
		}
		waitAgent(t, srv, uid, func(a agentView) bool { return !a.Online })
		do("uninstall")
		if got := state(); got != "not installed (windows-service)" {
			t.Fatalf("round %d: after uninstall the service is %q", round, got)
		}
	}
}

type agentView struct {
	Kind       string            `json:"kind"`
	Online     bool              `json:"online"`
	Attributes map[string]string `json:"attributes"`
}

func adminJSON(t *testing.T, s *server.Server, method, path, body string, out any) {
	t.Helper()
	code, data := servertest.API(t, s, method, path, body)
	if code/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, code, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
}

// waitFile waits for a file the service writes and returns its content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("%s was not written", path)
	return ""
}

func waitAgent(t *testing.T, s *server.Server, uid string, cond func(agentView) bool) agentView {
	t.Helper()
	var a agentView
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		a = agentView{}
		code, data := servertest.API(t, s, "GET", "/api/v1/agents/"+uid, "")
		if code == 200 && json.Unmarshal(data, &a) == nil && cond(a) {
			return a
		}
	}
	t.Fatalf("agent %s: the condition did not hold within a minute; last %+v", uid, a)
	return a
}

// checkEventLog reads the Application log while the service runs (it
// writes its log there). Wine 8 keeps no Event Log: a report is accepted
// (the probe's own write says so) and the log then holds no record, so
// the entries cannot be read back through the Event Log; this fails when a
// Wine that keeps them comes, to read them back there instead. What the
// service reported is read back from Wine's eventlog channel: its start,
// as information.
func checkEventLog(t *testing.T, w *wine) {
	t.Helper()
	probe := w.build(t, "./eventlogprobe", "eventlogprobe.exe")
	out, errs, err := w.run(t, probe, "myriarch-updater")
	if err != nil || !strings.Contains(out, "write: <nil>") {
		t.Fatalf("eventlogprobe: %v\n%s%s", err, out, errs)
	}
	if !strings.Contains(out, "records: 0\n") || !strings.Contains(out, "from myriarch-updater: 0\n") {
		t.Errorf("this Wine keeps an Event Log: read the service's entries back (want from myriarch-updater ≥ 1):\n%s", out)
	}
	if log := w.serviceLog(); !regexp.MustCompile(`(?m):trace:eventlog:ReportEventW L".*updater started`).MatchString(log) {
		t.Errorf("the service's start is not among its Event Log reports:\n%s", tail(log, 3000))
	}
}
