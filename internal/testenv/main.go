package testenv

import (
	"testing"

	"github.com/myriarch/myriarch/internal/testkit"
)

// MainWithPostgres is TestMain's body for a package whose tests use
// Postgres: it runs them with RunWithPostgres and fails the package when a
// goroutine or a process outlives them (testkit.RunChecked). Use it as
// func TestMain(m *testing.M) { os.Exit(testenv.MainWithPostgres(m)) }.
func MainWithPostgres(m *testing.M) int {
	return testkit.RunChecked(func() int { return RunWithPostgres(m) })
}
