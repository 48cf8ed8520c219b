package registry

import "testing"

// Every kind survives its record's one-byte code; a kind this binary does
// not know is held as unknown.
func TestKindCodes(t *testing.T) {
	for _, k := range []Kind{KindUnknown, KindUpdater, KindBridge, KindCollector} {
		if got := codeOf(k).Kind(); got != k {
			t.Errorf("%q held as %q", k, got)
		}
	}
	for _, k := range []Kind{"", "gateway"} {
		if got := codeOf(k).Kind(); got != KindUnknown {
			t.Errorf("%q held as %q, want %q", k, got, KindUnknown)
		}
	}
}
