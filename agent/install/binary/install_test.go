//go:build linux

package binary

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
)

const pkg = "otelcol-contrib"

var (
	stInstalled = protobufs.PackageStatusEnum_PackageStatusEnum_Installed
	stFailed    = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
	stPending   = protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending
	stDownload  = protobufs.PackageStatusEnum_PackageStatusEnum_Downloading
)

func TestInstallAndUpgradeKeepsTwoVersions(t *testing.T) {
	e := newEnv(t)
	eng, rec := e.engine(nil)
	st := rec.wait(t, pkg, 5*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stInstalled })
	if st.AgentHasVersion != "0.148.0" {
		t.Fatalf("initial status %v", st)
	}

	// Raw binary.
	v1 := collectorBinary("0.149.0-m.2", "ok")
	o1 := e.signedOffer("0.149.0-m.2", "/v1", v1)
	eng.Offer(context.Background(), o1)
	st = rec.wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.149.0-m.2" })
	// server_offered_hash is the offer's PackageAvailable.hash, agent_has_hash
	// the content hash.
	if st.Status != stInstalled || st.AgentHasVersion != "0.149.0-m.2" ||
		!bytes.Equal(st.AgentHasHash, o1.Packages[pkg].File.ContentHash) || !bytes.Equal(st.ServerOfferedHash, o1.Packages[pkg].Hash) {
		t.Fatalf("status %v", st)
	}
	rec.mu.Lock()
	for _, all := range rec.all {
		if st := all.GetPackages()[pkg]; st.GetServerOfferedVersion() == "0.149.0-m.2" && !bytes.Equal(st.GetServerOfferedHash(), o1.Packages[pkg].Hash) {
			t.Errorf("%v status reports server_offered_hash %x, want the offer hash %x", st.GetStatus(), st.GetServerOfferedHash(), o1.Packages[pkg].Hash)
		}
	}
	rec.mu.Unlock()
	if !rec.sawStatus(pkg, stDownload) || !rec.sawStatus(pkg, stPending) {
		t.Fatal("InstallPending and Downloading statuses were not reported")
	}
	rec.mu.Lock()
	for _, all := range rec.all {
		if st := all.GetPackages()[pkg]; st.GetStatus() == stDownload && st.GetDownloadDetails() == nil {
			t.Errorf("Downloading status without download_details: %v", st)
		}
		if all.ServerProvidedAllPackagesHash == nil {
			t.Error("server_provided_all_packages_hash not set")
		}
	}
	rec.mu.Unlock()
	d1 := dirFor("0.149.0-m.2", v1)
	if e.current() != d1 {
		t.Fatalf("current -> %s, want %s", e.current(), d1)
	}
	e.waitCollector(d1)

	// tar.gz, one top-level directory.
	v2bin := collectorBinary("0.150.0", "ok")
	v2 := tarGzOf(t, map[string][]byte{"otelcol-contrib_0.150.0/" + exeName: v2bin, "otelcol-contrib_0.150.0/LICENSE": []byte("x")}, nil)
	eng.Offer(context.Background(), e.signedOffer("0.150.0", "/v2", v2))
	st = rec.wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.150.0" })
	if st.Status != stInstalled {
		t.Fatalf("status %v", st)
	}
	d2 := dirFor("0.150.0", v2)
	e.waitCollector(d2)
	ents, _ := os.ReadDir(filepath.Join(e.root, "versions"))
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
	}
	slices.Sort(names)
	if want := []string{d1, d2}; !slices.Equal(names, slices.Sorted(slices.Values(want))) {
		t.Fatalf("versions/ holds %v, want the current and previous only %v", names, want)
	}
	// Same offer again: Installed at once, nothing downloaded.
	hits := e.hitCount("/v2")
	eng.Offer(context.Background(), e.signedOffer("0.150.0", "/v2", v2))
	rec.wait(t, pkg, 5*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stInstalled })
	time.Sleep(100 * time.Millisecond)
	if e.hitCount("/v2") != hits || eng.Busy() {
		t.Fatal("re-offer of the installed hash downloaded again")
	}
	if lst, err := eng.LastStatuses(); err != nil || lst.GetPackages()[pkg].GetAgentHasVersion() != "0.150.0" {
		t.Fatalf("persisted statuses %v %v", lst, err)
	}
}

// TestBadOffers: each bad offer ends in InstallFailed with a clear message
// while the running collector (same process) is untouched.
func TestBadOffers(t *testing.T) {
	good := collectorBinary("0.149.0", "ok")
	type tc struct {
		name string
		// build returns the offer; it may register handlers on e.
		build   func(e *env) *protobufs.PackagesAvailable
		opts    func(*Options)
		want    string
		offered string // package name to watch (default collector)
	}
	abort := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(good)))
			w.Write(good[:n])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
	}
	cases := []tc{
		{name: "wrong hash", build: func(e *env) *protobufs.PackagesAvailable {
			o := e.signedOffer("0.149.0", "/a", good)
			o.Packages[pkg].File.ContentHash = bytes.Repeat([]byte{1}, 32)
			return o
		}, want: "content hash mismatch"},
		{name: "missing signature", build: func(e *env) *protobufs.PackagesAvailable {
			return offer(pkg, "0.149.0", e.serve("/a", good), good, nil)
		}, want: "unsigned package"},
		{name: "invalid signature", build: func(e *env) *protobufs.PackagesAvailable {
			return offer(pkg, "0.149.0", e.serve("/a", good), good, []byte("untrusted comment: x\nRWQgarbage\n"))
		}, want: "malformed minisign signature"},
		{name: "signature of other content", build: func(e *env) *protobufs.PackagesAvailable {
			return offer(pkg, "0.149.0", e.serve("/a", good), good, e.sign([]byte("other")))
		}, want: "signature does not verify"},
		{name: "unknown-key signature", build: func(e *env) *protobufs.PackagesAvailable {
			other := newKeyEnv()
			return offer(pkg, "0.149.0", e.serve("/a", good), good, other.sign(good))
		}, want: "signature key is not trusted"},
		{name: "truncated download", build: func(e *env) *protobufs.PackagesAvailable {
			url := e.handle("/a", func(w http.ResponseWriter, r *http.Request) {
				hj, _, _ := w.(http.Hijacker).Hijack()
				fmt.Fprintf(hj, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(good))
				hj.Write(good[:1000])
				hj.Close()
			})
			return offer(pkg, "0.149.0", url, good, e.sign(good))
		}, want: "truncated: connection closed at 1000 of"},
		{name: "server closing mid-stream", build: func(e *env) *protobufs.PackagesAvailable {
			return offer(pkg, "0.149.0", e.handle("/a", abort(4096)), good, e.sign(good))
		}, want: "gave up after 3 attempt(s)"},
		{name: "404", build: func(e *env) *protobufs.PackagesAvailable {
			return offer(pkg, "0.149.0", e.srv.URL+"/missing", good, e.sign(good))
		}, want: "404"},
		{name: "500", build: func(e *env) *protobufs.PackagesAvailable {
			url := e.handle("/a", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) })
			return offer(pkg, "0.149.0", url, good, e.sign(good))
		}, want: "HTTP status 500"},
		{name: "redirect loop", build: func(e *env) *protobufs.PackagesAvailable {
			url := e.handle("/a", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/a", http.StatusFound) })
			return offer(pkg, "0.149.0", url, good, e.sign(good))
		}, want: "too many redirects"},
		{name: "slow-drip server", build: func(e *env) *protobufs.PackagesAvailable {
			url := e.handle("/a", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(good)))
				for i := 0; i < 200; i++ {
					if _, err := w.Write(good[i : i+1]); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			})
			return offer(pkg, "0.149.0", url, good, e.sign(good))
		}, opts: func(o *Options) {
			o.Download.Attempts = 1
			o.Download.LowSpeedTime = 300 * time.Millisecond
			o.Download.LowSpeedLimit = 10000
		}, want: "download stalled"},
		{name: "oversize", build: func(e *env) *protobufs.PackagesAvailable {
			return e.signedOffer("0.149.0", "/a", good)
		}, opts: func(o *Options) { o.MaxPackageSize = 1 << 20 }, want: "exceeds the size cap"},
		{name: "disk full (free-space pre-check)", build: func(e *env) *protobufs.PackagesAvailable {
			return e.signedOffer("0.149.0", "/a", good)
		}, opts: func(o *Options) {
			o.Download.FreeSpace = func(string) (uint64, error) { return uint64(2 * len(good)), nil }
		}, want: "not enough free disk space"},
		{name: "disk full (ENOSPC while writing)", build: func(e *env) *protobufs.PackagesAvailable {
			return e.signedOffer("0.149.0", "/a", good)
		}, opts: func(o *Options) {
			o.Download.WrapWriter = func(w io.Writer) io.Writer { return &enospcWriter{w: w, left: 100000} }
		}, want: "no space left on device"},
		{name: "archive with ../", build: func(e *env) *protobufs.PackagesAvailable {
			a := tarGzOf(t, map[string][]byte{exeName: good, "../escape": []byte("x")}, nil)
			return e.signedOffer("0.149.0", "/a", a)
		}, want: "climbs out with .."},
		{name: "archive with absolute path", build: func(e *env) *protobufs.PackagesAvailable {
			a := tarGzOf(t, map[string][]byte{exeName: good, "/etc/evil": []byte("x")}, nil)
			return e.signedOffer("0.149.0", "/a", a)
		}, want: "absolute path"},
		{name: "archive with symlink", build: func(e *env) *protobufs.PackagesAvailable {
			a := tarGzOf(t, map[string][]byte{"README": []byte("x")}, map[string]string{exeName: "/bin/sh"})
			return e.signedOffer("0.149.0", "/a", a)
		}, want: "links are not allowed"},
		{name: "missing executable", build: func(e *env) *protobufs.PackagesAvailable {
			a := tarGzOf(t, map[string][]byte{"otelcol": good}, nil)
			return e.signedOffer("0.149.0", "/a", a)
		}, want: "executable not found"},
		{name: "executable exits 1", build: func(e *env) *protobufs.PackagesAvailable {
			return e.signedOffer("0.149.0", "/a", collectorBinary("0.149.0", "exit1"))
		}, want: "exit status 1"},
		{name: "executable prints another version", build: func(e *env) *protobufs.PackagesAvailable {
			return e.signedOffer("0.149.0", "/a", collectorBinary("0.151.0", "ok"))
		}, want: `reports version "0.151.0", the offer says "0.149.0"`},
		{name: "downgrade", build: func(e *env) *protobufs.PackagesAvailable {
			b := collectorBinary("0.140.0", "ok")
			return e.signedOffer("0.140.0", "/a", b)
		}, want: "downgrade from 0.148.0 to 0.140.0 refused"},
		{name: "unparsable version", build: func(e *env) *protobufs.PackagesAvailable {
			return e.signedOffer("latest/../x", "/a", good)
		}, want: "unparsable version"},
		{name: "unknown package name", build: func(e *env) *protobufs.PackagesAvailable {
			return offer("nginx", "1.0.0", e.serve("/a", good), good, e.sign(good))
		}, want: `unknown package "nginx"`, offered: "nginx"},
		{name: "collector offered as TopLevel", build: func(e *env) *protobufs.PackagesAvailable {
			o := e.signedOffer("0.149.0", "/a", good)
			o.Packages[pkg].Type = protobufs.PackageType_PackageType_TopLevel
			return o
		}, want: "must be an Addon"},
		{name: "self-update not enabled", build: func(e *env) *protobufs.PackagesAvailable {
			o := offer(SelfPackage, "9.0.0", e.serve("/a", good), good, e.sign(good))
			o.Packages[SelfPackage].Type = protobufs.PackageType_PackageType_TopLevel
			return o
		}, want: "self-update is not enabled", offered: SelfPackage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			eng, rec := e.engine(c.opts)
			rec.wait(t, pkg, 5*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stInstalled })
			supPID := e.ctl.PID()
			colPID := e.waitCollector(e.initialDir)
			name := c.offered
			if name == "" {
				name = pkg
			}
			eng.Offer(context.Background(), c.build(e))
			st := rec.wait(t, name, 30*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stFailed })
			if !strings.Contains(st.ErrorMessage, c.want) {
				t.Fatalf("error_message %q does not contain %q", st.ErrorMessage, c.want)
			}
			for eng.Busy() {
				time.Sleep(10 * time.Millisecond)
			}
			if e.current() != e.initialDir || e.ctl.PID() != supPID || e.waitCollector(e.initialDir) != colPID {
				t.Fatal("the running collector was touched")
			}
			ents, _ := os.ReadDir(filepath.Join(e.root, "versions"))
			if len(ents) != 1 {
				t.Fatalf("versions/ has leftovers: %v", ents)
			}
			if _, err := os.Stat(filepath.Join(e.dir, "escape")); err == nil {
				t.Fatal("archive escaped")
			}
		})
	}
}

type enospcWriter struct {
	w    io.Writer
	left int
}

func (f *enospcWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n, _ := f.w.Write(p[:f.left])
		f.left = 0
		return n, &os.PathError{Op: "write", Path: "artifact", Err: syscall.ENOSPC}
	}
	f.left -= len(p)
	return f.w.Write(p)
}

// TestQuarantine: a hash that failed is refused at once when offered again.
func TestQuarantine(t *testing.T) {
	e := newEnv(t)
	eng, rec := e.engine(nil)
	good := collectorBinary("0.149.0", "ok")
	bad := e.signedOffer("0.149.0", "/a", good)
	bad.Packages[pkg].File.ContentHash = bytes.Repeat([]byte{7}, 32)
	eng.Offer(context.Background(), bad)
	rec.wait(t, pkg, 10*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stFailed })
	for eng.Busy() {
		time.Sleep(10 * time.Millisecond)
	}
	hits := e.hitCount("/a")
	eng.Offer(context.Background(), bad)
	st := rec.wait(t, pkg, time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stFailed })
	if !strings.Contains(st.ErrorMessage, "previously failed") || e.hitCount("/a") != hits {
		t.Fatalf("re-offer not refused from quarantine: %q (hits %d→%d)", st.ErrorMessage, hits, e.hitCount("/a"))
	}
	// A transient failure (404) only delays a retry of the same hash.
	missing := offer(pkg, "0.149.0", e.srv.URL+"/gone", good, e.sign(good))
	eng.Offer(context.Background(), missing)
	rec.wait(t, pkg, 10*time.Second, func(s *protobufs.PackageStatus) bool {
		return s.Status == stFailed && strings.Contains(s.ErrorMessage, "404")
	})
	for eng.Busy() {
		time.Sleep(10 * time.Millisecond)
	}
	eng.Offer(context.Background(), missing)
	st = rec.wait(t, pkg, time.Second, func(s *protobufs.PackageStatus) bool {
		return s.Status == stFailed && strings.Contains(s.ErrorMessage, "next attempt allowed after")
	})
	if e.hitCount("/gone") != 1 {
		t.Fatalf("404 retried at once: %d requests", e.hitCount("/gone"))
	}
	// Once the retry delay is over (forgotten here), the good artifact, whose
	// hash differs from the first bad offer's, installs.
	os.Remove(filepath.Join(e.state, quarantineFile))
	eng.Offer(context.Background(), e.signedOffer("0.149.0", "/a", good))
	st = rec.wait(t, pkg, 20*time.Second, func(s *protobufs.PackageStatus) bool {
		return s.Status == stInstalled && s.AgentHasVersion == "0.149.0"
	})
}

// TestHealthGateRollback: a collector that crash-loops after activation is
// rolled back; its log is kept and its hash quarantined.
func TestHealthGateRollback(t *testing.T) {
	e := newEnv(t)
	eng, rec := e.engine(nil)
	bad := collectorBinary("0.149.0", "crash")
	eng.Offer(context.Background(), e.signedOffer("0.149.0", "/bad", bad))
	st := rec.wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stFailed })
	if !strings.Contains(st.ErrorMessage, "rolled back to 0.148.0") || !strings.Contains(st.ErrorMessage, "health gate failed") {
		t.Fatalf("error_message %q", st.ErrorMessage)
	}
	if st.AgentHasVersion != "0.148.0" {
		t.Fatalf("agent_has_version %q", st.AgentHasVersion)
	}
	if e.current() != e.initialDir {
		t.Fatalf("current -> %s", e.current())
	}
	e.waitCollector(e.initialDir)
	log, err := os.ReadFile(filepath.Join(e.state, "failed", "0.149.0", "agent.log"))
	if err != nil || !strings.Contains(string(log), "fake collector 0.149.0") {
		t.Fatalf("failed collector log not kept: %q %v", log, err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "versions", dirFor("0.149.0", bad))); !os.IsNotExist(err) {
		t.Fatal("failed version directory left behind")
	}
	eng.Offer(context.Background(), e.signedOffer("0.149.0", "/bad", bad))
	st = rec.wait(t, pkg, time.Second, func(s *protobufs.PackageStatus) bool {
		return s.Status == stFailed && strings.Contains(s.ErrorMessage, "previously failed")
	})
}

// TestHealthcheckEndpoint: with a supervisor healthcheck endpoint the gate
// also needs a 200 from it.
func TestHealthcheckEndpoint(t *testing.T) {
	t.Run("answers 200", func(t *testing.T) {
		e := newEnv(t)
		port := freePort(t)
		e.ctl.Stop(context.Background())
		e.ctl.health = "127.0.0.1:" + port
		e.ctl.Start(context.Background())
		eng, rec := e.engine(func(o *Options) { o.HealthcheckURL = "http://127.0.0.1:" + port + "/" })
		eng.Offer(context.Background(), e.signedOffer("0.149.0", "/v", collectorBinary("0.149.0", "ok")))
		st := rec.wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.149.0" })
		if st.Status != stInstalled {
			t.Fatalf("status %v", st)
		}
	})
	t.Run("answers 500", func(t *testing.T) {
		e := newEnv(t)
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "unhealthy", 500) }))
		defer bad.Close()
		eng, rec := e.engine(func(o *Options) { o.HealthcheckURL = bad.URL; o.StartTimeout = time.Second })
		eng.Offer(context.Background(), e.signedOffer("0.149.0", "/v", collectorBinary("0.149.0", "ok")))
		st := rec.wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stFailed })
		if !strings.Contains(st.ErrorMessage, "supervisor healthcheck") || e.current() != e.initialDir {
			t.Fatalf("status %v current %s", st, e.current())
		}
		e.waitCollector(e.initialDir)
	})
}

func freePort(t testing.TB) string {
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.Listener.Addr().String()
	s.Close()
	return u[strings.LastIndexByte(u, ':')+1:]
}

// TestOfferWhileInstalling: a second offer during an install is queued and
// runs after the first one finished: never two installs at once.
func TestOfferWhileInstalling(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	v1 := collectorBinary("0.149.0", "ok")
	v2 := collectorBinary("0.150.0", "ok")
	url1 := e.handle("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-release
		http.ServeContent(w, r, "a", time.Time{}, bytes.NewReader(v1))
	})
	var mu sync.Mutex
	var steps []string
	eng, rec := e.engine(nil)
	eng.onStep = func(s string) { mu.Lock(); steps = append(steps, s); mu.Unlock() }
	eng.Offer(context.Background(), offer(pkg, "0.149.0", url1, v1, e.sign(v1)))
	rec.wait(t, pkg, 5*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stDownload })
	// The second offer arrives mid-download (a newer full offer from the server).
	o2 := e.signedOffer("0.150.0", "/fast", v2)
	eng.Offer(context.Background(), o2)
	if e.hitCount("/fast") != 0 {
		t.Fatal("second install started while the first runs")
	}
	close(release)
	st := rec.wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool {
		return s.Status == stInstalled && s.AgentHasVersion == "0.150.0"
	})
	_ = st
	mu.Lock()
	defer mu.Unlock()
	first := slices.Index(steps, cpCommitted)
	second := slices.Index(steps[first+1:], cpAdmitted)
	if first < 0 || second < 0 {
		t.Fatalf("steps %v", steps)
	}
	if n := strings.Count(strings.Join(steps, ","), cpAdmitted); n != 2 {
		t.Fatalf("%d installs, want 2: %v", n, steps)
	}
	e.waitCollector(dirFor("0.150.0", v2))
}
