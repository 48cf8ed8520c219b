package rollout

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine they started (a
// Queue's Serve goroutines) is still running at the end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
