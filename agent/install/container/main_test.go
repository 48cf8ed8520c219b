package container

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine they started is still
// running at the end (an engine's worker, the Docker client's).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
