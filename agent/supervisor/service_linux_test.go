package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSystemctl puts a systemctl on PATH that logs its arguments and answers
// "show" with a MainPID.
func fakeSystemctl(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	logf := filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + logf + "\ncase \"$1\" in show) echo 4242;; fail) exit 1;; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return logf
}

func TestServiceUsesSystemctl(t *testing.T) {
	logf := fakeSystemctl(t)
	s := NewService("opampsupervisor", nil)
	ctx := context.Background()
	for _, f := range []func(context.Context) error{s.Restart, s.Stop, s.Start} {
		if err := f(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if pid := s.PID(); pid != 4242 {
		t.Errorf("PID() = %d", pid)
	}
	b, _ := os.ReadFile(logf)
	want := "restart -- opampsupervisor\nstop -- opampsupervisor\nstart -- opampsupervisor\nshow --property=MainPID --value -- opampsupervisor\n"
	if string(b) != want {
		t.Errorf("systemctl calls:\n%s\nwant:\n%s", b, want)
	}
}

func TestServiceReportsSystemctlFailure(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'Unit nosuch.service not found.' >&2\nexit 5\n"
	if err := os.WriteFile(filepath.Join(dir, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	err := NewService("nosuch", nil).Restart(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "restart") {
		t.Errorf("err = %v", err)
	}
}
