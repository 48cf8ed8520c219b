package windows

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/myriarch/myriarch/agent/verify/sigstoretest"
)

// The self-update back-end's tests, built for Windows and run under Wine:
// its install contract suite (a real updater process killed with
// TerminateProcess at every crash point and recovered, every bad offer
// refused with the binary untouched, Sigstore and keyring installs), whole
// self-updates confirmed and rolled back with the Sigstore verifier beside
// the updater, and the live gate's crash loop: the executable swapped by
// minio/selfupdate's rename dance on Wine's files, under Windows paths.
func TestSelfUpdateUnderWine(t *testing.T) {
	w := prefix(t)
	bin := w.buildTest(t, "../../agent/install/selfupdate", "selfupdate.test.exe")
	fake := w.build(t, "../../agent/install/installtest/testdata/fakecollector", "fakecollector.exe")
	helper := w.build(t, "../../cmd/myriarch-sigstore", "myriarch-sigstore.exe")
	start := time.Now()
	out, errs, err := w.runWith(t, 10*time.Minute,
		[]string{installtest.FakeCollectorEnv + "=" + winPath(fake), sigstoretest.HelperEnv + "=" + winPath(helper)},
		bin, "-test.v", "-test.timeout", "9m")
	if err != nil || !strings.Contains(out, "\nPASS\n") {
		t.Fatalf("the self-update tests under Wine: %v\nfailed:\n%s\n%s\nstderr:\n%s", err, failures(out), tail(out, 4000), tail(errs, 2000))
	}
	if strings.Contains(out, "--- SKIP") {
		t.Fatalf("tests skipped under Wine:\n%s", strings.Join(regexp.MustCompile(`(?m)^\s*--- SKIP.*$`).FindAllString(out, -1), "\n"))
	}
	for _, want := range []string{
		"--- PASS: TestContract/CrashPoints/activating", "--- PASS: TestContract/CrashPoints/applied", "--- PASS: TestContract/CrashPoints/restored",
		"--- PASS: TestContract/BadOffers/keyring:_signed_by_a_revoked_key", "--- PASS: TestContract/SigstoreInstalls",
		"--- PASS: TestSelfUpdate/with_its_Sigstore_verifier,_rolled_back", "--- PASS: TestNewUpdaterThatKeepsRestartingIsRolledBack",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("under Wine, the output lacks %q", want)
		}
	}
	t.Logf("figure: %d tests passed under Wine in %s", strings.Count(out, "--- PASS"), time.Since(start).Round(time.Second))
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
