package main

import (
	"os"
	"testing"

	"github.com/myriarch/myriarch/internal/testkit"
)

// asMyriarchd makes the test binary run as myriarchd itself (for the
// shells of the completion test, which run the program by name).
const asMyriarchd = "MYRIARCH_TEST_AS_MYRIARCHD"

// TestMain fails the package when a test leaves a goroutine or a process
// running; run with asMyriarchd set, it is myriarchd.
func TestMain(m *testing.M) {
	if os.Getenv(asMyriarchd) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(testkit.RunChecked(m.Run))
}
