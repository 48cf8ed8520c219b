package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

// Scenario 4: the updater is killed (SIGKILL) in the middle of activation;
// restarted, it finishes or rolls back and the server agrees with the host.
func TestCrashDuringInstall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(peerbuild.VersionM1)
	e.waitCollector("linked", 90*time.Second, func(a site.Agent) bool { return a.Pairing.State == "linked" })
	// Restart the updater with the crash hook armed at the moment current was switched.
	e.updater.Stop(20 * time.Second)
	e.startUpdater([]string{"MYRIARCH_TEST_CRASH_AT=switched", "MYRIARCH_TEST_CRASH_MODE=kill"})
	e.setTarget(peerbuild.VersionM2)
	select {
	case <-e.updater.Done():
	case <-time.After(3 * time.Minute):
		t.Fatal("the updater did not reach the crash point")
	}
	t.Logf("updater died at the crash point: %v", e.updater.Err())
	e.startUpdater(nil)
	a := e.waitCollector("one valid version, agreed by the server", 3*time.Minute, func(a site.Agent) bool {
		v := a.Identifying["service.version"]
		return a.Online && (v == peerbuild.VersionM1 || v == peerbuild.VersionM2) &&
			(a.OfferState() == "up_to_date" || a.OfferState() == "failed" || (v == peerbuild.VersionM2))
	})
	v := a.Identifying["service.version"]
	cur, err := e.site.CurrentVersion()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cur, v) {
		t.Fatalf("server sees %s but current → %s", v, cur)
	}
	exe := filepath.Join(e.site.CollectorRoot, "current", peerbuild.CollectorExecutable)
	if st, err := os.Stat(exe); err != nil || st.Size() == 0 {
		t.Fatalf("current executable missing or empty: %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(e.site.CollectorRoot, "versions", "*.tmp"))
	if len(matches) > 0 {
		t.Fatalf("half-written version directories left: %v", matches)
	}
	if v == peerbuild.VersionM2 {
		e.waitCollector("up_to_date after recovery", time.Minute, func(a site.Agent) bool { return a.OfferState() == "up_to_date" })
	}
	t.Logf("after the crash the collector runs %s (current → %s), offer %s", v, cur, a.OfferState())
}

// Scenario 5: a second updater with the same token claims the same collector:
// offers are held; when it stops, they resume.
func TestAmbiguousUpdatersHoldOffers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(peerbuild.VersionM1)
	e.waitCollector("linked", 90*time.Second, func(a site.Agent) bool { return a.Pairing.State == "linked" })

	// The second updater reads the same supervisor state but has its own
	// identity (state_dir) and does not run a supervisor of its own.
	cfg, err := os.ReadFile(e.site.UpdaterConfig)
	if err != nil {
		t.Fatal(err)
	}
	second := strings.Replace(string(cfg), e.site.StateDir, filepath.Join(e.root, "second-state"), 1)
	second = strings.Replace(second, "control: process", "control: service\n    service: second-supervisor", 1)
	secondPath := filepath.Join(e.root, "second-updater.yaml")
	os.WriteFile(secondPath, []byte(second), 0o600)
	os.MkdirAll(filepath.Join(e.root, "second-state"), 0o700)
	s2 := &site.Site{UpdaterConfig: secondPath, LogDir: e.root}
	p2, err := s2.StartUpdater(bins.Updater, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p2.Stop(10 * time.Second) })
	e.waitCollector("ambiguous", time.Minute, func(a site.Agent) bool { return a.Pairing.State == "ambiguous" })
	e.setTarget(peerbuild.VersionM2)
	a := e.waitCollector("held_ambiguous", 30*time.Second, func(a site.Agent) bool { return a.OfferState() == "held_ambiguous" })
	if len(a.Pairing.Claimants) != 2 {
		t.Fatalf("claimants = %v", a.Pairing.Claimants)
	}
	p2.Stop(10 * time.Second)
	a = e.waitCollector("upgraded once the ambiguity resolved", 3*time.Minute, func(a site.Agent) bool {
		return a.Identifying["service.version"] == peerbuild.VersionM2 && a.OfferState() == "up_to_date"
	})
	// Nothing moved while the pairing was ambiguous: no offer was made, the
	// collector did not change version (that would be offer_up_to_date).
	if moves := offerMovesBetween(t, a, "offer_held_ambiguous", "pairing_resolved"); len(moves) > 0 {
		t.Fatalf("offers moved while the pairing was ambiguous: %v", moves)
	}
}

// Scenario 6: myriarchd restarts in the middle of a rollout; nothing is lost.
func TestServerRestartMidRollout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(peerbuild.VersionM1)
	e.waitCollector("linked", 90*time.Second, func(a site.Agent) bool { return a.Pairing.State == "linked" })
	e.setTarget(peerbuild.VersionM2)
	e.waitCollector("offer made", 30*time.Second, func(a site.Agent) bool { return a.OfferState() != "" })
	if err := e.srv.Stop(); err != nil {
		t.Logf("stop: %v", err)
	}
	if err := e.srv.Start(); err != nil {
		t.Fatal(err)
	}
	a := e.waitCollector("rollout finished after the restart", 3*time.Minute, func(a site.Agent) bool {
		return a.Online && a.Identifying["service.version"] == peerbuild.VersionM2 && a.OfferState() == "up_to_date"
	})
	if a.InstanceUID != e.colUID {
		t.Fatal("instance UID changed")
	}
	if len(a.Events) == 0 || a.Events[0].Type != "registered" {
		t.Fatalf("history lost across the restart: %+v", a.Events)
	}
}

// Scenario 7: an artifact signed with a key the updater does not trust is
// refused and the collector is untouched.
func TestUntrustedSignatureRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, rogue, err := minisign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := peers.Collector(peerbuild.VersionM2)
	if err := site.Publish(e.estate, c, rogue); err != nil {
		t.Fatal(err)
	}
	e.install(peerbuild.VersionM1)
	e.waitCollector("linked", 90*time.Second, func(a site.Agent) bool { return a.Pairing.State == "linked" })
	before, _ := e.site.CurrentVersion()
	e.setTarget(peerbuild.VersionM2)
	a := e.waitCollector("refused", 2*time.Minute, func(a site.Agent) bool { return a.OfferState() == "failed" })
	if a.Offer.Error == nil || !strings.Contains(strings.ToLower(*a.Offer.Error), "signature") {
		t.Fatalf("refusal reason = %v", a.Offer.Error)
	}
	after, _ := e.site.CurrentVersion()
	if before != after || a.Identifying["service.version"] != peerbuild.VersionM1 {
		t.Fatalf("collector touched: current %s → %s, version %s", before, after, a.Identifying["service.version"])
	}
	t.Logf("refused: %s", *a.Offer.Error)
}
