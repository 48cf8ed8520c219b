//go:build !linux

package testenv

import "testing"

// holdEngine does nothing where the Docker tests do not run.
func holdEngine(testing.TB, bool) {}
