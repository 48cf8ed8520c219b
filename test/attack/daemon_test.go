//go:build linux

package attack

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemon is one myriarchd process on loopback.
type daemon struct {
	t            *testing.T
	dataDir      string
	estate       string
	opamp, admin string
	args         []string
	logPath      string
	cmd          *exec.Cmd
	exited       chan struct{}
	adminToken   string
	http         *http.Client
}

// startDaemon starts myriarchd with a fresh data directory and extra flags.
func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	return startDaemonWithEstate(t, nil, args...)
}

// startDaemonWithEstate starts myriarchd with a fresh data directory, an
// estate directory holding files (none without files) and extra flags.
func startDaemonWithEstate(t *testing.T, files map[string]string, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, dataDir: filepath.Join(t.TempDir(), "data"), opamp: freeAddr(t), admin: freeAddr(t),
		args: args, logPath: filepath.Join(t.TempDir(), "myriarchd.log"), http: &http.Client{Timeout: time.Minute}}
	if files != nil {
		d.estate = filepath.Join(t.TempDir(), "estate")
		writeEstate(t, d.estate, files)
	}
	d.start()
	t.Cleanup(d.stop)
	return d
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start starts the process and waits until it is ready. Addresses taken
// by another process between freeAddr and the bind (tests run in
// parallel) are replaced by fresh ones, a few times at most.
func (d *daemon) start() {
	d.t.Helper()
	for attempt := 1; ; attempt++ {
		before := d.logSize()
		if d.startOnce() {
			return
		}
		fresh := d.logSince(before)
		if attempt == 3 || !strings.Contains(fresh, "address already in use") {
			d.t.Fatalf("myriarchd exited at start:\n%s", fresh)
		}
		d.opamp, d.admin = freeAddr(d.t), freeAddr(d.t)
	}
}

func (d *daemon) logSize() int64 {
	if fi, err := os.Stat(d.logPath); err == nil {
		return fi.Size()
	}
	return 0
}

// logSince is the log written from offset on (its last 8000 bytes).
func (d *daemon) logSince(offset int64) string {
	b, _ := os.ReadFile(d.logPath)
	if offset <= int64(len(b)) {
		b = b[offset:]
	}
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// startOnce starts the process; false when it exited before it was ready.
func (d *daemon) startOnce() bool {
	d.t.Helper()
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		d.t.Fatal(err)
	}
	args := []string{"serve", "--data-dir", d.dataDir, "--listen", d.opamp, "--admin-listen", d.admin, "--log-format", "json"}
	if d.estate != "" {
		args = append(args, "--estate", d.estate)
	}
	d.cmd = exec.Command(bins.myriarchd, append(args, d.args...)...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // dies with the test
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.exited = make(chan struct{})
	go func() { _ = d.cmd.Wait(); logf.Close(); close(d.exited) }()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-d.exited:
			return false
		default:
		}
		if tok, err := os.ReadFile(filepath.Join(d.dataDir, "admin.token")); err == nil {
			d.adminToken = strings.TrimSpace(string(tok))
			// Ready, and this process: another's listener on a
			// taken address would refuse this one's admin token.
			if code, _ := d.api("GET", "/readyz", nil); code == 200 {
				if code, _ := d.api("GET", "/api/v1/estate", nil); code == 200 {
					return true
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.t.Fatalf("myriarchd not ready within a minute:\n%s", d.log())
	return false
}

// stop ends the process with SIGTERM (SIGKILL after 30 s); it returns how
// long it took.
func (d *daemon) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
	}
	d.cmd = nil
}

// kill ends the process with SIGKILL, as a crash or power loss would.
func (d *daemon) kill() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.exited
	d.cmd = nil
}

func (d *daemon) restart() { d.stop(); d.start() }

func (d *daemon) log() string {
	b, _ := os.ReadFile(d.logPath)
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// rss is the resident set size of the process, in bytes.
func (d *daemon) rss() int64 {
	d.t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	d.t.Fatal("no VmRSS")
	return 0
}

// api calls the admin API with the admin token; body is JSON-encoded.
func (d *daemon) api(method, path string, body any) (int, []byte) {
	d.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+d.admin+path, rd)
	req.Header.Set("Authorization", "Bearer "+d.adminToken)
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// token creates an enrollment token and returns its id and secret.
func (d *daemon) token(name string) (id, secret string) {
	d.t.Helper()
	code, body := d.api("POST", "/api/v1/tokens", map[string]any{"name": name})
	if code != http.StatusCreated {
		d.t.Fatalf("create token: %d %s", code, body)
	}
	var tok struct{ ID, Token string }
	json.Unmarshal(body, &tok)
	return tok.ID, tok.Token
}

// agentJSON is GET /api/v1/agents/{uid}: its status and raw body.
func (d *daemon) agentJSON(uid string) (int, []byte) { return d.api("GET", "/api/v1/agents/"+uid, nil) }

type agentView struct {
	Attributes map[string]string `json:"attributes"`
	Events     []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"events"`
}

func (d *daemon) agent(uid string) (agentView, bool) {
	d.t.Helper()
	code, body := d.agentJSON(uid)
	if code != 200 {
		return agentView{}, false
	}
	var a agentView
	if err := json.Unmarshal(body, &a); err != nil {
		d.t.Fatal(err)
	}
	return a, true
}

// metric sums a family's samples (with a label filter like `reason="x"`) from /metrics.
func (d *daemon) metric(family, filter string) float64 {
	d.t.Helper()
	_, body := d.api("GET", "/metrics", nil)
	sum := 0.0
	for _, l := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(l, family) || (filter != "" && !strings.Contains(l, filter)) {
			continue
		}
		rest := strings.TrimPrefix(l, family)
		if rest != "" && rest[0] != '{' && rest[0] != ' ' {
			continue
		}
		f := strings.Fields(l)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		sum += v
	}
	return sum
}

// heapAfterGC collects garbage in the server and returns its live heap.
func (d *daemon) heapAfterGC() int64 {
	d.t.Helper()
	if code, _ := d.api("GET", "/debug/pprof/heap?gc=1", nil); code != 200 {
		d.t.Fatalf("heap profile: %d", code)
	}
	return int64(d.metric("go_memstats_heap_alloc_bytes", ""))
}

// dirSize is the bytes of the files under dir.
func dirSize(t *testing.T, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
