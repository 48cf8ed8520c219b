package main

import (
	"strings"
	"testing"
)

// setup's usage errors and bad settings exit 2 with every problem listed
// and nothing changed; a failure of the setup itself exits 1.
func TestSetupExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"setup", "--no-start"}, 2, []string{"problems, nothing was changed:", "  - --server is required", "  - --site-id is required"}},
		{[]string{"setup", "--purge"}, 2, []string{"1 problem, nothing was changed:", "--purge only goes with --uninstall"}},
		{[]string{"setup", "extra"}, 2, []string{`unexpected argument "extra"`}},
		{[]string{"setup", "--uninstall", "--root", "/nonexistent-prefix"}, 2, []string{"--root needs --no-start"}},
		{[]string{"setup", "--uninstall", "--no-start", "--root", t.TempDir()}, 0, nil},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", tc.args, code, tc.code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, stderr)
			}
		}
	}
}
