package selfupdate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/installtest"
)

// appliedSite is a site whose executable was just replaced by a good 0.2.0
// (the pending marker written, as the old updater leaves it), with the
// offer that did it.
func appliedSite(t *testing.T) (s *site, state string, oldBin []byte, o *protobufs.PackagesAvailable) {
	t.Helper()
	s = newSite(t)
	state = t.TempDir()
	oldBin, _ = os.ReadFile(s.exe)
	newBin := installtest.Binary("0.2.0", "ok")
	staged := filepath.Join(t.TempDir(), exeName())
	if err := os.WriteFile(staged, newBin, 0o755); err != nil {
		t.Fatal(err)
	}
	u, err := New(s.exe, state)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(newBin)
	if err := u.Apply(staged, "", "0.1.0", "0.2.0", hexOf(sum[:]), ""); err != nil {
		t.Fatal(err)
	}
	o = installtest.Offer(install.SelfPackage, protobufs.PackageType_PackageType_TopLevel, "0.2.0", s.srv.Serve("/self", newBin), newBin, s.srv.Sign(newBin))
	return s, state, oldBin, o
}

// startJudged starts the updater now in place, judged for stableFor.
func startJudged(t *testing.T, s *site, state string, stableFor time.Duration, restarts chan string) *install.Engine {
	t.Helper()
	b, err := NewBackend(Options{Version: "0.2.0", Executable: s.exe, StableFor: stableFor,
		RequestRestart: func(r string) { restarts <- r }})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := install.New(testOptions(state, s.srv.PublicKey()), installtest.TestLogger(t), b)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng
}

// The new updater is judged while it runs: meanwhile the offer that
// installed it is neither Installed nor fetched again; a new updater that
// keeps being restarted before it has run StableFor (a crash loop: the
// service manager starts it again and again) is rolled back at its
// MaxStarts+1-th start, the old binary restored and restarted, and the
// version reported failed.
func TestNewUpdaterThatKeepsRestartingIsRolledBack(t *testing.T) {
	installtest.NeedStandIns(t)
	s, state, oldBin, o := appliedSite(t)
	restarts := make(chan string, 4)
	for start := 1; start <= 3; start++ {
		eng := startJudged(t, s, state, time.Hour, restarts)
		if !eng.Busy() {
			t.Fatalf("start %d: the self-update is not being judged", start)
		}
		rec := installtest.NewRecorder()
		eng.HandlePackages(context.Background(), o, rec.Report)
		if st := selfStatus(t, eng); (st != nil && st.Status == stInstalled) || s.srv.Hits("/self") != 0 {
			t.Fatalf("start %d: the offer being judged is %v after %d downloads", start, st.GetStatus(), s.srv.Hits("/self"))
		}
		if err := eng.Close(); err != nil { // the updater dies before StableFor
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(s.exe); bytes.Equal(b, oldBin) {
			t.Fatalf("start %d: rolled back before MaxStarts", start)
		}
	}
	eng := startJudged(t, s, state, time.Hour, restarts)
	defer eng.Close()
	installtest.WaitIdle(t, eng)
	st := selfStatus(t, eng)
	if st.GetStatus() != stFailed || !strings.Contains(st.ErrorMessage, "started 4 times without staying up") {
		t.Fatalf("status %v, want InstallFailed naming the restarts", st)
	}
	if b, _ := os.ReadFile(s.exe); !bytes.Equal(b, oldBin) {
		t.Fatal("the old binary was not restored")
	}
	if len(restarts) != 1 {
		t.Fatalf("%d restarts requested, want 1 into the restored binary", len(restarts))
	}
}

// A new updater that stays up StableFor is confirmed while it runs.
func TestNewUpdaterThatStaysUpIsConfirmed(t *testing.T) {
	installtest.NeedStandIns(t)
	s, state, _, _ := appliedSite(t)
	restarts := make(chan string, 1)
	eng := startJudged(t, s, state, 200*time.Millisecond, restarts)
	defer eng.Close()
	installtest.WaitIdle(t, eng)
	if st := selfStatus(t, eng); st.GetStatus() != stInstalled || st.AgentHasVersion != "0.2.0" {
		t.Fatalf("status %v, want Installed 0.2.0", st)
	}
	if _, err := os.Stat(filepath.Join(state, "selfupdate", "pending.json")); err == nil {
		t.Fatal("the pending marker is left after the confirmation")
	}
	if len(restarts) != 0 {
		t.Fatal("restart requested after a confirmed update")
	}
}
