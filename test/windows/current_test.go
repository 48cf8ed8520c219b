package windows

import (
	"strings"
	"testing"
)

// Binary mode's switch of "current" where no junction can be made (Wine 8
// makes none): a copy of the version, marked with its name, switched by
// the same renames, recovered after a crash between them, and its staged
// copy removed whole by recovery. The binary back-end's test built for
// Windows, run under Wine.
func TestCurrentSwitchUnderWine(t *testing.T) {
	w := prefix(t)
	bin := w.buildTest(t, "../../agent/install/binary", "binary.test.exe")
	out, errs, err := w.run(t, bin, "-test.run", "^TestCurrentSwitch$/^copy$", "-test.v")
	if err != nil || !strings.Contains(out, "--- PASS: TestCurrentSwitch/copy") {
		t.Fatalf("under Wine: %v\n%s\n%s", err, tail(out, 4000), tail(errs, 2000))
	}
}
