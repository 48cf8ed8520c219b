package server_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/internal/testenv"
)

// TestMain fails the package when a test leaves a goroutine running, and
// stops the private PostgreSQL the tests started, if any.
func TestMain(m *testing.M) { goleak.VerifyTestMain(withPostgres{m}) }

// withPostgres runs the tests with testenv.RunWithPostgres.
type withPostgres struct{ m *testing.M }

func (w withPostgres) Run() int { return testenv.RunWithPostgres(w.m) }
