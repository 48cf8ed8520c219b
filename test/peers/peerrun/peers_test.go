//go:build linux

package peerrun_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"aead.dev/minisign"
	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/test/peers/peerbuild"
	"github.com/myriarch/myriarch/test/peers/peerrun"
)

// These tests run the real upstream programs. The first run on a machine
// builds them (minutes); later runs reuse $HOME/.cache/myriarch/peers.

var (
	peersOnce sync.Once
	peers     *peerbuild.Peers
	peersErr  error
)

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func ensurePeers(t *testing.T) *peerbuild.Peers {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the upstream OpAMP Supervisor and collectors; not in -short mode")
	}
	peersOnce.Do(func() {
		// A cold build can take longer than `go test`'s default timeout on a
		// loaded machine: stop it cleanly before the test binary panics.
		deadline := time.Now().Add(40 * time.Minute)
		if d, ok := t.Deadline(); ok {
			deadline = d.Add(-30 * time.Second)
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		peers, peersErr = peerbuild.Ensure(ctx, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	})
	if peersErr != nil {
		t.Fatalf("build peers: %v\n(run `make peers` first, or give go test a longer -timeout)", peersErr)
	}
	return peers
}

func sha256File(t *testing.T, r io.Reader) string {
	t.Helper()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestPeersCollectorsAndArchives(t *testing.T) {
	p := ensurePeers(t)
	want := []struct {
		version string
		broken  bool
	}{{peerbuild.VersionM1, false}, {peerbuild.VersionM2, false}, {peerbuild.VersionBroken, true}}
	if len(p.Collectors) != len(want) {
		t.Fatalf("%d collectors, want %d", len(p.Collectors), len(want))
	}
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		c := p.Collectors[i]
		t.Run(w.version, func(t *testing.T) {
			if c.Version != w.version || c.Broken != w.broken {
				t.Fatalf("collector %d is %s (broken %t), want %s (broken %t)", i, c.Version, c.Broken, w.version, w.broken)
			}
			out, err := exec.Command(c.Executable, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("--version: %v: %s", err, out)
			}
			if got, want := strings.TrimSpace(string(out)), "otelcol-myriarch version "+w.version; got != want {
				t.Errorf("--version printed %q, want %q", got, want)
			}

			wantName := fmt.Sprintf("otelcol_%s_linux_%s.tar.gz", w.version, runtime.GOARCH)
			if c.ArchiveName() != wantName {
				t.Errorf("archive name %s, want %s", c.ArchiveName(), wantName)
			}
			f, err := os.Open(c.Archive)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if got := sha256File(t, f); got != c.ArchiveSHA256 {
				t.Errorf("archive sha256 %s, recorded %s", got, c.ArchiveSHA256)
			}
			f.Seek(0, io.SeekStart)
			gz, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			tr := tar.NewReader(gz)
			h, err := tr.Next()
			if err != nil {
				t.Fatal(err)
			}
			if h.Name != peerbuild.CollectorExecutable || h.Mode&0o111 == 0 {
				t.Errorf("archive entry %s mode %o, want executable %s", h.Name, h.Mode, peerbuild.CollectorExecutable)
			}
			if got := sha256File(t, tr); got != c.ExecutableSHA256 {
				t.Errorf("archived executable sha256 %s, want %s", got, c.ExecutableSHA256)
			}
			if _, err := tr.Next(); err != io.EOF {
				t.Errorf("archive has more than one entry (next: %v)", err)
			}

			a, err := c.PublishSigned(filepath.Join(t.TempDir(), "releases"), priv)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(a.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !minisign.Verify(pub, data, a.Signature) {
				t.Error("published archive signature does not verify")
			}
		})
	}
}

// agentView is what the test OpAMP server knows about one agent.
type agentView struct {
	attrs   map[string]string // identifying and non-identifying
	healthy bool
	headers []string // Authorization values seen when connecting
}

// opampServer is a minimal OpAMP server on 127.0.0.1 that records what
// agents report.
type opampServer struct {
	endpoint string

	mu      sync.Mutex
	agents  map[string]*agentView
	pending []string // Authorization headers of connections with no message yet
	changed chan struct{}
}

func startOpAMPServer(t *testing.T) *opampServer {
	t.Helper()
	s := &opampServer{agents: map[string]*agentView{}, changed: make(chan struct{})}
	srv := server.New(nil)
	err := srv.Start(server.StartSettings{
		ListenEndpoint: "127.0.0.1:0",
		ListenPath:     "/v1/opamp",
		Settings: server.Settings{Callbacks: types.Callbacks{
			OnConnecting: func(r *http.Request) types.ConnectionResponse {
				auth := r.Header.Get("Authorization")
				return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
					OnMessage: func(_ context.Context, _ types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
						return s.onMessage(auth, msg)
					},
				}}
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Stop(ctx)
	})
	s.endpoint = "ws://" + srv.Addr().String() + "/v1/opamp"
	return s
}

func (s *opampServer) onMessage(auth string, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	id, err := uuid.FromBytes(msg.GetInstanceUid())
	resp := &protobufs.ServerToAgent{
		InstanceUid:  msg.GetInstanceUid(),
		Capabilities: uint64(protobufs.ServerCapabilities_ServerCapabilities_AcceptsStatus),
	}
	if err != nil {
		return resp
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[id.String()]
	if a == nil {
		a = &agentView{attrs: map[string]string{}}
		s.agents[id.String()] = a
	}
	if auth != "" && (len(a.headers) == 0 || a.headers[len(a.headers)-1] != auth) {
		a.headers = append(a.headers, auth)
	}
	if d := msg.GetAgentDescription(); d != nil {
		for _, kv := range append(d.GetIdentifyingAttributes(), d.GetNonIdentifyingAttributes()...) {
			a.attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
	} else if len(a.attrs) == 0 {
		resp.Flags = uint64(protobufs.ServerToAgentFlags_ServerToAgentFlags_ReportFullState)
	}
	if h := msg.GetHealth(); h != nil {
		a.healthy = h.GetHealthy()
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return resp
}

// waitAgent waits until some agent satisfies ok and returns its instance UID.
func (s *opampServer) waitAgent(t *testing.T, timeout time.Duration, what string, ok func(*agentView) bool) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		for id, a := range s.agents {
			if ok(a) {
				s.mu.Unlock()
				return id
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no agent %s within %v; agents: %s", what, timeout, s.dump())
			return ""
		}
	}
}

func (s *opampServer) dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for id, a := range s.agents {
		fmt.Fprintf(&b, "\n  %s healthy=%t headers=%v attrs=%v", id, a.healthy, a.headers, a.attrs)
	}
	return b.String()
}

// logTail is the end of a log file, for failure messages.
func logTail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// site is a supervised collector's install layout in a temporary root.
type site struct {
	collector string // the stable agent.executable path
	storage   string
	config    string
	logDir    string
}

// supervised starts a supervisor running collector version v in a fresh
// site root and returns it with its storage directory.
func supervised(t *testing.T, p *peerbuild.Peers, srv *opampServer, version string) (*peerrun.Process, string) {
	t.Helper()
	s := newSite(t, p, srv, version, 10*time.Second)
	return s.start(t, p, 1), s.storage
}

// newSite lays out a site running version; bootstrap is the supervisor's
// agent.bootstrap_timeout (generous for working collectors on a loaded
// machine, short where the bootstrap is expected to fail).
func newSite(t *testing.T, p *peerbuild.Peers, srv *opampServer, version string, bootstrap time.Duration) site {
	t.Helper()
	c, err := p.Collector(version)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	exe := filepath.Join(root, "collector", "current", "otelcol")
	if err := c.InstallTo(exe); err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(root, "supervisor", "state")
	cfg := peerrun.SupervisorConfig{
		ServerEndpoint:           srv.endpoint,
		Headers:                  map[string]string{"Authorization": "Bearer token-" + version},
		Collector:                exe,
		StorageDir:               storage,
		NonIdentifyingAttributes: map[string]string{"site.name": "site-" + version},
		BootstrapTimeout:         bootstrap,
	}
	cfgPath := filepath.Join(root, "supervisor", "config.yaml")
	if err := cfg.WriteFile(cfgPath); err != nil {
		t.Fatal(err)
	}
	return site{collector: exe, storage: storage, config: cfgPath, logDir: filepath.Join(root, "supervisor")}
}

// start runs the n-th supervisor process of the site; cleanup stops it.
func (s site) start(t *testing.T, p *peerbuild.Peers, n int) *peerrun.Process {
	t.Helper()
	storage := s.storage
	proc, err := peerrun.StartSupervisor(p.Supervisor, s.config, filepath.Join(s.logDir, fmt.Sprintf("supervisor-%d.log", n)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := proc.Stop(20 * time.Second); err != nil {
			t.Logf("stopping supervisor: %v", err)
		}
		if t.Failed() {
			t.Logf("supervisor pid %d exit: %v", proc.Pid(), proc.Err())
			t.Logf("supervisor log:\n%s", logTail(proc.LogPath))
			t.Logf("collector log:\n%s", logTail(filepath.Join(storage, "agent.log")))
		}
	})
	return proc
}

// TestPeersSupervisorRunsCollectors runs m.1 and m.2 under two supervisors at
// once on one host: each collector reports its label as service.version, is
// healthy, carries the site attribute, and the supervisor persists the
// instance UID it reports and stops cleanly on SIGINT.
func TestPeersSupervisorRunsCollectors(t *testing.T) {
	p := ensurePeers(t)
	srv := startOpAMPServer(t)
	for _, version := range []string{peerbuild.VersionM1, peerbuild.VersionM2} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			proc, storage := supervised(t, p, srv, version)

			id := srv.waitAgent(t, 2*time.Minute, "reporting "+version+" healthy", func(a *agentView) bool {
				return a.attrs["service.version"] == version && a.attrs["site.name"] == "site-"+version && a.healthy
			})
			srv.mu.Lock()
			a := srv.agents[id]
			name, headers := a.attrs["service.name"], append([]string(nil), a.headers...)
			srv.mu.Unlock()
			if name == "" {
				t.Error("no service.name reported")
			}
			if len(headers) == 0 || headers[0] != "Bearer token-"+version {
				t.Errorf("Authorization headers %v, want Bearer token-%s", headers, version)
			}

			statePath := filepath.Join(storage, "persistent_state.yaml")
			data, err := os.ReadFile(statePath)
			if err != nil {
				t.Fatalf("supervisor wrote no persistent state: %v", err)
			}
			var state struct {
				InstanceID string `yaml:"instance_id"`
			}
			if err := yaml.Unmarshal(data, &state); err != nil {
				t.Fatalf("persistent_state.yaml: %v\n%s", err, data)
			}
			if state.InstanceID != id {
				t.Errorf("persisted instance_id %s, reported %s", state.InstanceID, id)
			}

			// SIGINT alone must stop the supervisor and its collector.
			stopClean(t, proc)
		})
	}
}

// waitGroupEmpty waits until no process is left in process group pgid.
func waitGroupEmpty(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
			return
		}
	}
	t.Errorf("processes of group %d still run after the supervisor stopped", pgid)
}

// TestPeersBrokenCollectorCannotStart shows the broken release failing the
// way the updater must detect: the supervisor cannot bootstrap it and exits,
// and no agent ever reports its version.
func TestPeersBrokenCollectorCannotStart(t *testing.T) {
	p := ensurePeers(t)
	srv := startOpAMPServer(t)
	s := newSite(t, p, srv, peerbuild.VersionBroken, 3*time.Second)
	proc := s.start(t, p, 1)
	select {
	case <-proc.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("supervisor with the broken collector still runs after 2 minutes")
	}
	if proc.Err() == nil {
		t.Error("supervisor with the broken collector exited with status 0")
	}
	if log := logTail(proc.LogPath); !strings.Contains(log, "could not get bootstrap info") {
		t.Errorf("supervisor log lacks the bootstrap failure:\n%s", log)
	}
	// The failure is the missing component, not a slow machine.
	if log := logTail(filepath.Join(s.storage, "agent.log")); !strings.Contains(log, `unknown type: "opamp"`) {
		t.Errorf("collector log lacks the missing opamp extension:\n%s", log)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for id, a := range srv.agents {
		if a.attrs["service.version"] == peerbuild.VersionBroken {
			t.Errorf("agent %s reported the broken version", id)
		}
	}
}

// stopClean stops a supervisor with SIGINT alone and checks that it and its
// collector are gone.
func stopClean(t *testing.T, proc *peerrun.Process) {
	t.Helper()
	if err := proc.Interrupt(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.Done():
	case <-time.After(time.Minute):
		t.Fatal("supervisor still runs a minute after SIGINT")
	}
	if err := proc.Err(); err != nil {
		t.Errorf("supervisor exit after SIGINT: %v", err)
	}
	waitGroupEmpty(t, proc.Pid())
}

// TestPeersManualUpgradeKeepsInstanceUID performs by hand the upgrade the
// updater automates (stop supervisor, rename m.2 over the stable collector
// path, start supervisor) and checks the peers support it: the same instance
// UID then reports 0.149.0-m.2.
func TestPeersManualUpgradeKeepsInstanceUID(t *testing.T) {
	p := ensurePeers(t)
	srv := startOpAMPServer(t)
	s := newSite(t, p, srv, peerbuild.VersionM1, 10*time.Second)

	first := s.start(t, p, 1)
	id := srv.waitAgent(t, 2*time.Minute, "reporting "+peerbuild.VersionM1, func(a *agentView) bool {
		return a.attrs["service.version"] == peerbuild.VersionM1 && a.healthy
	})
	stopClean(t, first)

	m2, err := p.Collector(peerbuild.VersionM2)
	if err != nil {
		t.Fatal(err)
	}
	staged := s.collector + ".new"
	if err := m2.InstallTo(staged); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(staged, s.collector); err != nil {
		t.Fatal(err)
	}

	s.start(t, p, 2)
	got := srv.waitAgent(t, 2*time.Minute, "reporting "+peerbuild.VersionM2, func(a *agentView) bool {
		return a.attrs["service.version"] == peerbuild.VersionM2 && a.healthy
	})
	if got != id {
		t.Errorf("after the upgrade the instance UID is %s, was %s", got, id)
	}
}
