//go:build linux

package binary

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/open-telemetry/opamp-go/protobufs"
)

func TestInstallAndUpgradeKeepsTwoVersions(t *testing.T) {
	e := newEnv(t)
	eng, rec := e.engine(nil)
	if st := lastStatus(t, eng); st.GetStatus() != stInstalled || st.AgentHasVersion != "0.148.0" {
		t.Fatalf("initial status %v", st)
	}

	// Raw binary.
	v1 := collectorBinary("0.149.0-m.2", "ok")
	o1 := e.signedOffer("0.149.0-m.2", "/v1", v1)
	offer(eng, rec, o1)
	st := rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.149.0-m.2" })
	// server_offered_hash is the offer's PackageAvailable.hash, agent_has_hash
	// the content hash.
	if st.Status != stInstalled || st.AgentHasVersion != "0.149.0-m.2" ||
		!bytes.Equal(st.AgentHasHash, o1.Packages[pkg].File.ContentHash) || !bytes.Equal(st.ServerOfferedHash, o1.Packages[pkg].Hash) {
		t.Fatalf("status %v", st)
	}
	for _, all := range rec.All() {
		if st := all.GetPackages()[pkg]; st.GetServerOfferedVersion() == "0.149.0-m.2" && !bytes.Equal(st.GetServerOfferedHash(), o1.Packages[pkg].Hash) {
			t.Errorf("%v status reports server_offered_hash %x, want the offer hash %x", st.GetStatus(), st.GetServerOfferedHash(), o1.Packages[pkg].Hash)
		}
		if st := all.GetPackages()[pkg]; st.GetStatus() == stDownload && st.GetDownloadDetails() == nil {
			t.Errorf("Downloading status without download_details: %v", st)
		}
		if all.ServerProvidedAllPackagesHash == nil {
			t.Error("server_provided_all_packages_hash not set")
		}
	}
	if !rec.Saw(pkg, stDownload) || !rec.Saw(pkg, stPending) || !rec.Saw(pkg, stInstalling) {
		t.Fatal("InstallPending, Downloading and Installing statuses were not reported")
	}
	d1 := dirFor("0.149.0-m.2", v1)
	if e.current() != d1 {
		t.Fatalf("current -> %s, want %s", e.current(), d1)
	}
	e.waitCollector(d1)

	// tar.gz, one top-level directory.
	v2bin := collectorBinary("0.150.0", "ok")
	v2 := tarGzOf(t, map[string][]byte{"otelcol-contrib_0.150.0/" + exeName: v2bin, "otelcol-contrib_0.150.0/LICENSE": []byte("x")}, nil)
	offer(eng, rec, e.signedOffer("0.150.0", "/v2", v2))
	st = rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.150.0" })
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
	// Same offer again: Installed at once (HandlePackages answers it
	// before it returns), nothing queued, nothing downloaded. The finished
	// transaction's tail (its journal removed) ends first: until then the
	// same hash counts as being installed.
	installtest.WaitIdle(t, eng)
	hits := e.srv.Hits("/v2")
	n := len(rec.All())
	offer(eng, rec, e.signedOffer("0.150.0", "/v2", v2))
	if all := rec.All(); len(all) != n+1 || all[n].GetPackages()[pkg].GetStatus() != stInstalled || eng.Busy() || e.srv.Hits("/v2") != hits {
		t.Fatal("re-offer of the installed hash was not answered Installed at once")
	}
	if lst, err := eng.LastStatuses(); err != nil || lst.GetPackages()[pkg].GetAgentHasVersion() != "0.150.0" {
		t.Fatalf("persisted statuses %v %v", lst, err)
	}
}

// TestQuarantine: a hash that failed is refused at once when offered again.
func TestQuarantine(t *testing.T) {
	e := newEnv(t)
	eng, rec := e.engine(nil)
	good := collectorBinary("0.149.0", "ok")
	bad := e.signedOffer("0.149.0", "/a", good)
	bad.Packages[pkg].File.ContentHash = bytes.Repeat([]byte{7}, 32)
	offer(eng, rec, bad)
	rec.Wait(t, pkg, 10*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stFailed })
	installtest.WaitIdle(t, eng)
	hits := e.srv.Hits("/a")
	offer(eng, rec, bad)
	st := rec.Wait(t, pkg, time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stFailed })
	if !strings.Contains(st.ErrorMessage, "previously failed") || e.srv.Hits("/a") != hits {
		t.Fatalf("re-offer not refused from quarantine: %q (hits %d→%d)", st.ErrorMessage, hits, e.srv.Hits("/a"))
	}
	// A transient failure (404) only delays a retry of the same hash.
	missing := installtest.Offer(pkg, protobufs.PackageType_PackageType_Addon, "0.149.0", e.srv.URL()+"/gone", good, e.srv.Sign(good))
	offer(eng, rec, missing)
	rec.Wait(t, pkg, 10*time.Second, func(s *protobufs.PackageStatus) bool {
		return s.Status == stFailed && strings.Contains(s.ErrorMessage, "404")
	})
	installtest.WaitIdle(t, eng)
	offer(eng, rec, missing)
	st = rec.Wait(t, pkg, time.Second, func(s *protobufs.PackageStatus) bool {
		return s.Status == stFailed && strings.Contains(s.ErrorMessage, "next attempt allowed after")
	})
	if e.srv.Hits("/gone") != 1 {
		t.Fatalf("404 retried at once: %d requests", e.srv.Hits("/gone"))
	}
	// Once the retry delay is over (forgotten here), the good artifact, whose
	// hash differs from the first bad offer's, installs.
	os.Remove(filepath.Join(e.state, install.QuarantineFile))
	offer(eng, rec, e.signedOffer("0.149.0", "/a", good))
	st = rec.Wait(t, pkg, 20*time.Second, func(s *protobufs.PackageStatus) bool {
		return s.Status == stInstalled && s.AgentHasVersion == "0.149.0"
	})
}

// TestHealthGateRollback: a collector that crash-loops after activation is
// rolled back; its log is kept and its hash quarantined.
func TestHealthGateRollback(t *testing.T) {
	e := newEnv(t)
	eng, rec := e.engine(nil)
	bad := collectorBinary("0.149.0", "crash")
	offer(eng, rec, e.signedOffer("0.149.0", "/bad", bad))
	st := rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stFailed })
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
	installtest.WaitIdle(t, eng)
	offer(eng, rec, e.signedOffer("0.149.0", "/bad", bad))
	st = rec.Wait(t, pkg, time.Second, func(s *protobufs.PackageStatus) bool {
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
		eng, rec := e.engine(func(s *engineSetup) { s.binary.HealthcheckURL = "http://127.0.0.1:" + port + "/" })
		offer(eng, rec, e.signedOffer("0.149.0", "/v", collectorBinary("0.149.0", "ok")))
		st := rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.149.0" })
		if st.Status != stInstalled {
			t.Fatalf("status %v", st)
		}
	})
	t.Run("answers 500", func(t *testing.T) {
		e := newEnv(t)
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "unhealthy", 500) }))
		defer bad.Close()
		eng, rec := e.engine(func(s *engineSetup) { s.binary.HealthcheckURL = bad.URL; s.install.StartTimeout = 5 * time.Second })
		offer(eng, rec, e.signedOffer("0.149.0", "/v", collectorBinary("0.149.0", "ok")))
		st := rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stFailed })
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
	url1 := e.srv.Handle("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-release
		http.ServeContent(w, r, "a", time.Time{}, bytes.NewReader(v1))
	})
	var mu sync.Mutex
	var steps []string
	eng, rec := e.engine(func(s *engineSetup) {
		s.install.Observe = func(s string) { mu.Lock(); steps = append(steps, s); mu.Unlock() }
	})
	offer(eng, rec, installtest.Offer(pkg, protobufs.PackageType_PackageType_Addon, "0.149.0", url1, v1, e.srv.Sign(v1)))
	rec.Wait(t, pkg, 5*time.Second, func(s *protobufs.PackageStatus) bool { return s.Status == stDownload })
	// The second offer arrives mid-download (a newer full offer from the server).
	o2 := e.signedOffer("0.150.0", "/fast", v2)
	offer(eng, rec, o2)
	if e.srv.Hits("/fast") != 0 {
		t.Fatal("second install started while the first runs")
	}
	close(release)
	st := rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool {
		return s.Status == stInstalled && s.AgentHasVersion == "0.150.0"
	})
	_ = st
	mu.Lock()
	defer mu.Unlock()
	first := slices.Index(steps, install.CPCommitted)
	second := slices.Index(steps[first+1:], install.CPAdmitted)
	if first < 0 || second < 0 {
		t.Fatalf("steps %v", steps)
	}
	if n := strings.Count(strings.Join(steps, ","), install.CPAdmitted); n != 2 {
		t.Fatalf("%d installs, want 2: %v", n, steps)
	}
	e.waitCollector(dirFor("0.150.0", v2))
}
