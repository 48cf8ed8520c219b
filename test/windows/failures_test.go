package windows

import (
	"strings"
	"testing"
)

// failures keeps what each failed test printed, and nothing of the others.
func TestFailures(t *testing.T) {
	out := strings.Join([]string{
		"=== RUN   TestA", "=== RUN   TestA/ok", "    a_test.go:1: fine", "=== RUN   TestA/bad", "    a_test.go:9: want 1, got 2",
		"=== RUN   TestB", "    b_test.go:3: also fine", "=== NAME  TestA/bad", "    a_test.go:12: and later", "=== NAME  TestB", "    b_test.go:4: fine",
		"--- FAIL: TestA (1s)", "    --- PASS: TestA/ok (0s)", "    --- FAIL: TestA/bad (1s)", "--- PASS: TestB (0s)", "FAIL",
	}, "\n")
	got := failures(out)
	if !strings.Contains(got, "--- FAIL: TestA/bad\n    a_test.go:9: want 1, got 2\n    a_test.go:12: and later\n") || strings.Contains(got, "fine") {
		t.Fatalf("failures:\n%s", got)
	}
}
