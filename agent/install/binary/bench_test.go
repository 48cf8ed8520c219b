//go:build linux

package binary

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"strconv"
	"strings"

	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// waitNewChild polls (1 ms) until the supervisor's child runs exe.
func (e *env) waitNewChild(exe string, timeout time.Duration) time.Time {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if pid, got := e.collectorChild(); pid != 0 && sameFile(got, exe) {
			return time.Now()
		}
		time.Sleep(time.Millisecond)
	}
	return time.Time{}
}

// waitMark polls (1 ms) until the transaction passed point; the benchmark
// that waits fails on its own deadline if it never does.
func waitMark(mu *sync.Mutex, marks map[string]time.Time, point string) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		mu.Lock()
		_, ok := marks[point]
		mu.Unlock()
		if ok {
			return
		}
	}
}

// BenchmarkSwapDowntime measures how long the collector is down during an
// upgrade (stop issued → new collector process running) against a plain
// supervisor restart of the same version (the collector's own stop+start),
// so the difference is the downtime the swap adds.
func BenchmarkSwapDowntime(b *testing.B) {
	e := newEnv(b)
	var mu sync.Mutex
	marks := map[string]time.Time{}
	eng, rec := e.engine(func(s *engineSetup) {
		s.install.Observe = func(s string) { mu.Lock(); marks[s] = time.Now(); mu.Unlock() }
	})
	var swap, restart, switchDur time.Duration
	for i := 0; i < b.N; i++ {
		// Baseline: restart without a swap.
		cur := e.exeInCurrent()
		t0 := time.Now()
		e.ctl.Stop(context.Background())
		e.ctl.Start(context.Background())
		t1 := e.waitNewChild(cur, 10*time.Second)
		restart += t1.Sub(t0)

		ver := fmt.Sprintf("0.149.%d", i+1)
		art := collectorBinary(ver, "ok")
		newExe := filepath.Join(e.root, "versions", dirFor(ver, art), exeName)
		running := make(chan time.Time, 1)
		go func() {
			waitMark(&mu, marks, cpActivating)
			running <- e.waitNewChild(newExe, 20*time.Second)
		}()
		offer(eng, rec, e.signedOffer(ver, "/v"+ver, art))
		up := <-running
		rec.Wait(b, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == ver })
		mu.Lock()
		swap += up.Sub(marks[cpActivating])
		switchDur += marks[cpSwitchRecorded].Sub(marks[cpSupervisorStopped])
		clear(marks)
		mu.Unlock()
	}
	reportDowntime(b, swap, restart)
	b.ReportMetric(float64(switchDur.Microseconds())/float64(b.N)/1000, "switch-ms")
}

// reportDowntime reports the mean downtime of a swap, of a plain restart,
// and what the swap adds.
func reportDowntime(b *testing.B, swap, restart time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(swap.Milliseconds())/n, "swap-down-ms")
	b.ReportMetric(float64(restart.Milliseconds())/n, "restart-down-ms")
	b.ReportMetric(float64((swap-restart).Milliseconds())/n, "extra-down-ms")
}

func (e *env) exeInCurrent() string {
	d, _ := readCurrent(e.root)
	return filepath.Join(e.root, "versions", d, exeName)
}

// BenchmarkInstallPeakRSS runs a whole install in a separate updater process
// and reports its peak RSS (getrusage maxrss) for artifacts of 20 and 200 MB.
func BenchmarkInstallPeakRSS(b *testing.B) {
	for _, mb := range []int{20, 200} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			var peak int64
			for i := 0; i < b.N; i++ {
				peak = max(peak, e2eRSS(b, mb))
			}
			b.ReportMetric(float64(peak)/1024, "peak-rss-MB")
		})
	}
}

func e2eRSS(b *testing.B, mb int) int64 {
	e := newEnv(b)
	// A working fake collector padded to mb MB (ELF ignores trailing data),
	// written to disk and served from there: the test process itself never
	// holds the artifact.
	bin, err := installtest.FakeCollector()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "art")
	f, _ := os.Create(path)
	h := sha256.New()
	body := io.MultiReader(bytes.NewReader(bin), io.LimitReader(rand.NewChaCha8([32]byte{byte(mb)}), int64(mb)<<20),
		strings.NewReader("\nFAKECOL:0.149.0:ok\n"))
	if _, err := io.Copy(io.MultiWriter(f, h), body); err != nil {
		b.Fatal(err)
	}
	f.Close()
	sum := h.Sum(nil)
	sig, err := e.srv.SignFile(path)
	if err != nil {
		b.Fatal(err)
	}
	url := e.srv.Handle("/big", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, path) })
	o := &protobufs.PackagesAvailable{AllPackagesHash: []byte("x"), Packages: map[string]*protobufs.PackageAvailable{pkg: {
		Type: protobufs.PackageType_PackageType_Addon, Version: "0.149.0", Hash: sum,
		File: &protobufs.DownloadableFile{DownloadUrl: url, ContentHash: sum, Signature: sig},
	}}}
	var cfg siteConfig
	json.Unmarshal(e.Config(e.state), &cfg)
	cfg.MaxSize = 1 << 30
	raw, _ := json.Marshal(cfg)
	st, run := installtest.RunChild(b, fixture, raw, o, "")
	if st.GetPackages()[pkg].GetStatus() != stInstalled {
		b.Fatalf("install failed: %v\n%s", st, run.Output)
	}
	i := strings.Index(run.Output, installtest.ChildPeakRSS)
	if i < 0 {
		b.Fatalf("no peak RSS in the updater's output:\n%s", run.Output)
	}
	kib, err := strconv.ParseInt(strings.Fields(run.Output[i+len(installtest.ChildPeakRSS):])[0], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return kib
}
