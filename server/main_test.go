package server_test

import (
	"os"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv"
)

// TestMain fails the package when a test leaves a goroutine running, and
// stops the private PostgreSQL the tests started, if any.
func TestMain(m *testing.M) { os.Exit(testenv.MainWithPostgres(m)) }
