package keyrings

import (
	"os"
	"testing"

	"github.com/myriarch/myriarch/internal/testkit"
)

// TestMain fails the package when a test leaves a goroutine or a process running.
func TestMain(m *testing.M) { os.Exit(testkit.RunChecked(m.Run)) }
