package windows

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/myriarch/myriarch/agent/verify/sigstoretest"
)

// fakeSupervisorEnv is agent/install/binary's FakeSupervisorEnv (a test
// file's constant, not importable).
const fakeSupervisorEnv = "MYRIARCH_FAKE_SUPERVISOR"

// Binary mode's installs under Wine: the binary back-end's tests built for
// Windows. First the switch of current as Wine allows it (a copy); then
// its install contract suite, with its fake Supervisor running the
// fake collector from C:\…\collector\current (a copy of the version: Wine
// makes no junction): a real updater process killed with TerminateProcess
// at each of the install's crash points (after the switch's renames, mid
// rollback) and recovered by the next one, every bad offer refused with
// the running collector untouched, broken versions rolled back, Sigstore
// and keyring installs.
func TestBinaryInstallsUnderWine(t *testing.T) {
	w := prefix(t)
	bin := w.buildTest(t, "../../agent/install/binary", "binary.test.exe")
	fake := w.build(t, "../../agent/install/installtest/testdata/fakecollector", "fakecollector.exe")
	sup := w.build(t, "../../agent/install/binary/testdata/fakesupervisor", "fakesupervisor.exe")
	helper := w.build(t, "../../cmd/myriarch-sigstore", "myriarch-sigstore.exe")
	env := []string{installtest.FakeCollectorEnv + "=" + winPath(fake), fakeSupervisorEnv + "=" + winPath(sup),
		sigstoretest.HelperEnv + "=" + winPath(helper)}

	// The switch of current where no junction can be made: a copy of the
	// version, switched by the same renames, recovered after a crash
	// between them, its staged copy removed whole by recovery.
	out, errs, err := w.runWith(t, time.Minute, env, bin, "-test.run", "^TestCurrentSwitch$/^copy$", "-test.v")
	if err != nil || !strings.Contains(out, "--- PASS: TestCurrentSwitch/copy") {
		t.Fatalf("the switch of current under Wine: %v\n%s\n%s", err, tail(out, 4000), tail(errs, 2000))
	}

	start := time.Now()
	out, errs, err = w.runWith(t, 12*time.Minute, env, bin, "-test.run", "^TestContract$", "-test.v", "-test.timeout", "11m")
	if err != nil || !strings.Contains(out, "\nPASS\n") {
		t.Fatalf("the binary back-end's contract suite under Wine: %v\nfailed:\n%s\n%s\nstderr:\n%s", err, failures(out), tail(out, 4000), tail(errs, 2000))
	}
	if strings.Contains(out, "--- SKIP") {
		t.Fatalf("tests skipped under Wine:\n%s", strings.Join(regexp.MustCompile(`(?m)^\s*--- SKIP.*$`).FindAllString(out, -1), "\n"))
	}
	for _, want := range []string{
		"--- PASS: TestContract/CrashPoints/link-staged", "--- PASS: TestContract/CrashPoints/switched",
		"--- PASS: TestContract/CrashPoints/rollback-switched", "--- PASS: TestContract/CrashPoints/health-gate",
		"--- PASS: TestContract/BadOffers", "--- PASS: TestContract/SigstoreInstalls", "--- PASS: TestContract/KeyringInstalls",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("under Wine, the output lacks %q", want)
		}
	}
	t.Logf("figure: %d tests passed under Wine in %s", strings.Count(out, "--- PASS"), time.Since(start).Round(time.Second))
}

// The state files under Windows file sharing: one that `status` (another
// process) holds while the service replaces it, or the other way round, is
// waited for a moment instead of failing (agent/journal's test built for
// Windows).
func TestStateFilesUnderWine(t *testing.T) {
	w := prefix(t)
	bin := w.buildTest(t, "../../agent/journal", "journal.test.exe")
	out, errs, err := w.run(t, bin, "-test.run", "^TestStateFileHeldForAMoment$", "-test.v")
	if err != nil || !strings.Contains(out, "--- PASS: TestStateFileHeldForAMoment") {
		t.Fatalf("under Wine: %v\n%s\n%s", err, failures(out), tail(errs, 2000))
	}
}
