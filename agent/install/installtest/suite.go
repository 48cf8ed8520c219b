package installtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/pkgstatus"
	"github.com/myriarch/myriarch/agent/quarantine"
	"github.com/myriarch/myriarch/agent/statefile"
)

// Run runs the contract suite against the back-end f describes.
func Run(t *testing.T, f *Fixture) {
	t.Run("CrashPoints", func(t *testing.T) { testCrashPoints(t, f) })
	t.Run("BadOffers", func(t *testing.T) { testBadOffers(t, f) })
	t.Run("SigstoreInstalls", func(t *testing.T) { testSigstoreInstalls(t, f) })
	t.Run("KeyringInstalls", func(t *testing.T) { testKeyringInstalls(t, f) })
}

var (
	stInstalled = protobufs.PackageStatusEnum_PackageStatusEnum_Installed
	stFailed    = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
)

// testCrashPoints kills a real updater process (SIGKILL) at every crash
// point of the back-end, runs new ones until the transaction is over, and
// checks that the old or the new version runs, complete, as the point says,
// and that the server is told what happened.
func testCrashPoints(t *testing.T, f *Fixture) {
	if len(f.CrashPoints) < 10 {
		t.Fatalf("only %d crash points", len(f.CrashPoints))
	}
	firstNew := ""
	for _, cp := range f.CrashPoints {
		if cp.Path == install.OnInstall && cp.KeepsNew && firstNew == "" {
			firstNew = cp.Name
		}
	}
	for _, cp := range f.CrashPoints {
		t.Run(cp.Name, func(t *testing.T) {
			if !f.Serial {
				t.Parallel()
			}
			site := f.NewSite(t)
			state := t.TempDir()
			cfg := site.Config(state)
			old, newV := site.Versions()
			broken := cp.Path == install.OnRollback
			art := site.Artifact(t, newV, broken)
			offer := Offer(f.Package, f.Type, newV, site.Server().Serve("/crash-"+cp.Name, art), art, site.Server().Sign(art))

			first := cp.Name
			if cp.Path == install.OnRecovery {
				first = firstNew // leave a transaction to recover, then crash while recovering it
			}
			reachAt(t, f, cfg, offer, first)
			if cp.Path == install.OnRecovery {
				reachAt(t, f, cfg, nil, cp.Name)
			}
			// Recover; a self-update may take a start more (a rollback
			// restarts into the restored binary).
			var st *protobufs.PackageStatuses
			for range 3 {
				st, _ = RunChild(t, f, cfg, nil, "")
				if !exists(filepath.Join(state, install.JournalFile)) {
					break
				}
			}
			if exists(filepath.Join(state, install.JournalFile)) {
				t.Fatal("the journal is still there after recovery")
			}
			checkEnd(t, f, site, state, offer, art, cp.KeepsNew, broken)
			want := old
			if cp.KeepsNew {
				want = newV
			}
			t.Logf("recovered from %s: %s runs; %v %q", cp.Name, want, st.GetPackages()[f.Package].GetStatus(), st.GetPackages()[f.Package].GetErrorMessage())
		})
	}
}

// reachAt runs updater processes (the first with offer) with the crash
// hook armed at point until one reaches it and is killed.
func reachAt(t *testing.T, f *Fixture, cfg []byte, offer *protobufs.PackagesAvailable, point string) {
	t.Helper()
	var out []string
	for i := range 3 {
		o := offer
		if i > 0 {
			o = nil
		}
		_, run := RunChild(t, f, cfg, o, point)
		if run.Reached {
			return
		}
		out = append(out, run.Output)
	}
	t.Fatalf("crash point %s not reached:\n%s", point, strings.Join(out, "\n---\n"))
}

// checkEnd checks the end of a transaction: what runs, the last status,
// the quarantine and the installed record, and the back-end's invariants.
func checkEnd(t *testing.T, f *Fixture, site Site, state string, offer *protobufs.PackagesAvailable, art []byte, isNew, broken bool) {
	t.Helper()
	old, newV := site.Versions()
	want := old
	if isNew {
		want = newV
	}
	if _, v := site.Running(t); v != want {
		t.Fatalf("%s runs, want %s", v, want)
	}
	last, err := lastStatuses(f, state)
	if err != nil {
		t.Fatal(err)
	}
	ps := last.GetPackages()[f.Package]
	switch {
	case ps == nil:
		t.Fatalf("no status for %s: %v", f.Package, last)
	case isNew && (ps.Status != stInstalled || ps.AgentHasVersion != newV):
		t.Fatalf("want Installed %s, got %v", newV, ps)
	case !isNew && (ps.Status != stFailed || ps.AgentHasVersion != old || ps.ErrorMessage == ""):
		t.Fatalf("want InstallFailed with %s kept, got %v", old, ps)
	}
	if wantHash := offer.Packages[f.Package].Hash; !bytes.Equal(ps.ServerOfferedHash, wantHash) {
		t.Errorf("server_offered_hash %x, want the offer hash %x", ps.ServerOfferedHash, wantHash)
	}
	sum := sha256.Sum256(art)
	q := Delayed // interrupted before it ran
	switch {
	case isNew:
		q = NotQuarantined
	case broken:
		q = Blocked
	}
	checkQuarantine(t, f, state, hex.EncodeToString(sum[:]), q)
	if file := site.InstalledFile(); file != "" {
		var rec struct{ Version, Hash string }
		ok, err := statefile.Read(filepath.Join(state, file), &rec)
		switch {
		case err != nil:
			t.Fatal(err)
		case isNew && (!ok || rec.Version != newV || rec.Hash != hex.EncodeToString(sum[:])):
			t.Errorf("installed record %+v (present %v), want %s %x", rec, ok, newV, sum)
		case !isNew && ok && rec.Version != old:
			t.Errorf("installed record %+v, want %s or none", rec, old)
		}
	}
	site.Check(t, state, isNew)
}

func lastStatuses(f *Fixture, state string) (*protobufs.PackageStatuses, error) {
	return pkgstatus.Load(filepath.Join(state, f.StatePrefix+install.StatusesFile))
}

// checkQuarantine checks what the quarantine holds about a content hash.
func checkQuarantine(t testing.TB, f *Fixture, state, hash string, want Quarantine) {
	t.Helper()
	q, err := quarantine.New(filepath.Join(state, f.StatePrefix+install.QuarantineFile), time.Minute, nil).Load()
	if err != nil {
		t.Fatal(err)
	}
	ent, ok := q[hash]
	switch {
	case want == NotQuarantined && ok:
		t.Errorf("hash %s quarantined (%+v), want not", hash[:16], ent)
	case want == Delayed && (!ok || !ent.Transient):
		t.Errorf("hash %s: quarantine %+v (present %v), want a transient entry", hash[:16], ent, ok)
	case want == Blocked && (!ok || ent.Transient):
		t.Errorf("hash %s: quarantine %+v (present %v), want a permanent entry", hash[:16], ent, ok)
	}
}

// testBadOffers offers every kind of bad package to an engine on a site and
// checks that each ends in InstallFailed naming what was wrong, with the
// running version untouched and nothing left behind.
func testBadOffers(t *testing.T, f *Fixture) {
	site := f.NewSite(t)
	offers := append(append(genericBadOffers(f), sigstoreBadOffers(t, f)...), keyringBadOffers(t, f)...)
	if f.BadOffers != nil {
		offers = append(offers, f.BadOffers(t, site)...)
	}
	for _, bo := range offers {
		t.Run(bo.Name, func(t *testing.T) {
			state := t.TempDir()
			ctx, eng := startEngine(t, f, site, state, func(string) { t.Error("restart requested") }, bo.Options)
			id, _ := site.Running(t)
			o := bo.Offer(t, site)
			var name string
			for n := range o.Packages {
				name = n
			}
			rec := newRecorder()
			eng.HandlePackages(ctx, o, rec.report)
			st := rec.wait(t, name, o.Packages[name].Version)
			if st.Status != stFailed || !strings.Contains(st.ErrorMessage, bo.Want) {
				t.Fatalf("%v %q, want InstallFailed naming %q", st.Status, st.ErrorMessage, bo.Want)
			}
			waitIdle(t, eng)
			if now, _ := site.Running(t); now != id {
				t.Fatalf("what runs changed: %s, was %s", now, id)
			}
			site.Check(t, state, false)
			checkQuarantine(t, f, state, hex.EncodeToString(o.Packages[name].File.ContentHash), bo.Quarantine)
			if exists(filepath.Join(state, install.JournalFile)) {
				t.Error("the journal is left behind")
			}
			t.Logf("refused: %s", st.ErrorMessage)
		})
	}
}

// startEngine builds the fixture's engine on site with state and
// options, and replays its journal; it is closed when t ends.
func startEngine(t *testing.T, f *Fixture, site Site, state string, restart func(string), options func(*install.Options)) (context.Context, *install.Engine) {
	t.Helper()
	eng, err := f.Engine(site.Config(state), testLogger(t), restart, options)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); eng.Close() })
	if err := eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, eng
}

// waitIdle waits until the engine has neither a running nor a queued
// transaction.
func waitIdle(t testing.TB, eng *install.Engine) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for eng.Busy() {
		if time.Now().After(deadline) {
			t.Fatal("the engine is still busy after 2 minutes")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitIdle is waitIdle for back-end tests.
func WaitIdle(t testing.TB, eng *install.Engine) { t.Helper(); waitIdle(t, eng) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// Recorder keeps every status set an engine reports.
type Recorder struct {
	mu   sync.Mutex
	all  []*protobufs.PackageStatuses
	wake chan struct{}
}

func newRecorder() *Recorder { return &Recorder{wake: make(chan struct{}, 1)} }

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return newRecorder() }

// Report is an install.Reporter.
func (r *Recorder) Report(s *protobufs.PackageStatuses) error { return r.report(s) }

func (r *Recorder) report(s *protobufs.PackageStatuses) error {
	r.mu.Lock()
	r.all = append(r.all, s)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// All returns every status set so far.
func (r *Recorder) All() []*protobufs.PackageStatuses {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*protobufs.PackageStatuses(nil), r.all...)
}

// Wait returns the latest status of pkg once it satisfies ok, failing the
// test after timeout.
func (r *Recorder) Wait(t testing.TB, pkg string, timeout time.Duration, ok func(*protobufs.PackageStatus) bool) *protobufs.PackageStatus {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		var last *protobufs.PackageStatus
		if n := len(r.all); n > 0 {
			last = r.all[n-1].GetPackages()[pkg]
		}
		r.mu.Unlock()
		if last != nil && ok(last) {
			return last
		}
		select {
		case <-r.wake:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timeout waiting for a status of %s; last: %v", pkg, last)
		}
	}
}

// wait returns the first terminal status of pkg for version.
func (r *Recorder) wait(t testing.TB, pkg, version string) *protobufs.PackageStatus {
	t.Helper()
	return r.Wait(t, pkg, 2*time.Minute, func(s *protobufs.PackageStatus) bool {
		return s.ServerOfferedVersion == version && (s.Status == stInstalled || s.Status == stFailed)
	})
}

// Saw reports whether any status of pkg had status s.
func (r *Recorder) Saw(pkg string, s protobufs.PackageStatusEnum) bool {
	for _, all := range r.All() {
		if st := all.GetPackages()[pkg]; st != nil && st.Status == s {
			return true
		}
	}
	return false
}

// TestLogger writes an engine's log to the test log.
func TestLogger(t testing.TB) *slog.Logger { return testLogger(t) }

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
