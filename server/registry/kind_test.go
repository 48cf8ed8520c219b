package registry

import (
	"testing"
	"unsafe"
)

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

// An agent's record stays within the 256-byte size class: every instance
// holds one for every agent of the estate.
func TestAgentRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(agent{}); n > 256 {
		t.Fatalf("agent record is %d bytes, want at most 256", n)
	}
}
