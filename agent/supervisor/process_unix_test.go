//go:build unix

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/internal/testkit"
)

// The test binary doubles as a fake supervisor: with FAKE_SUPERVISOR set it
// starts a grandchild ("collector"), records both PIDs and then behaves as
// the mode says.
func TestMain(m *testing.M) {
	if mode := os.Getenv("FAKE_SUPERVISOR"); mode != "" {
		fakeSupervisor(mode, os.Getenv("FAKE_DIR"))
		return
	}
	os.Exit(testkit.RunChecked(m.Run))
}

func fakeSupervisor(mode, dir string) {
	sig := make(chan os.Signal, 1)
	switch mode {
	case "ignore-sigint":
		signal.Ignore(syscall.SIGINT)
	default:
		signal.Notify(sig, syscall.SIGINT)
	}
	child := exec.Command("sleep", "300") // stands in for the collector
	if err := child.Start(); err != nil {
		os.Exit(3)
	}
	_ = os.WriteFile(filepath.Join(dir, "pids"), fmt.Appendf(nil, "%d %d", os.Getpid(), child.Process.Pid), 0o600)
	switch mode {
	case "exit":
		os.Exit(7)
	case "ignore-sigint":
		select {}
	}
	<-sig
	_ = os.WriteFile(filepath.Join(dir, "got-sigint"), nil, 0o600)
	// Like the real supervisor's clean shutdown: stop the collector, then exit.
	_ = child.Process.Signal(syscall.SIGTERM)
	_, _ = child.Process.Wait()
	os.Exit(0)
}

func newFake(t *testing.T, mode string) (*Process, string) {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_SUPERVISOR", mode)
	t.Setenv("FAKE_DIR", dir)
	p := NewProcess([]string{exe, "-test.run=^$"}, nil)
	p.Output = os.Stderr
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p, dir
}

// waitPIDs waits for the fake supervisor to record its and its child's PIDs.
func waitPIDs(t *testing.T, dir string) (sup, child int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, "pids")); err == nil {
			f := strings.Fields(string(b))
			if len(f) == 2 {
				sup, _ = strconv.Atoi(f[0])
				child, _ = strconv.Atoi(f[1])
				return sup, child
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("fake supervisor did not start")
	return 0, 0
}

func alive(pid int) bool {
	// Signal 0 checks existence; a zombie still counts, so also look at /proc when present.
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
			return false
		}
	}
	return true
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d still alive", pid)
}

func TestProcessStartStopWithSIGINT(t *testing.T) {
	p, dir := newFake(t, "clean")
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
	sup, child := waitPIDs(t, dir)
	if p.PID() != sup {
		t.Fatalf("PID() = %d, fake supervisor reports %d", p.PID(), sup)
	}
	if pgid, _ := syscall.Getpgid(sup); pgid != sup {
		t.Errorf("supervisor pgid = %d, want its own group %d", pgid, sup)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "got-sigint")); err != nil {
		t.Errorf("supervisor was not stopped with SIGINT: %v", err)
	}
	if p.PID() != 0 {
		t.Errorf("PID() after Stop = %d", p.PID())
	}
	waitGone(t, child)
	select {
	case err := <-p.Exited():
		t.Errorf("requested stop reported as unexpected exit: %v", err)
	default:
	}
	if err := p.Stop(ctx); err != nil { // no-op when stopped
		t.Fatal(err)
	}
}

func TestProcessKillsGroupWhenSIGINTIgnored(t *testing.T) {
	p, dir := newFake(t, "ignore-sigint")
	p.StopGrace = 100 * time.Millisecond
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	sup, child := waitPIDs(t, dir)
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitGone(t, sup)
	waitGone(t, child) // the orphaned "collector" went with the group
}

func TestProcessReportsUnexpectedExitAndRestarts(t *testing.T) {
	p, dir := newFake(t, "exit")
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, child := waitPIDs(t, dir)
	select {
	case err := <-p.Exited():
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Errorf("Exited = %v, want exit status 7", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("unexpected exit not reported")
	}
	waitGone(t, child)
	if p.PID() != 0 {
		t.Errorf("PID() = %d after exit", p.PID())
	}
	os.Remove(filepath.Join(dir, "pids"))
	t.Setenv("FAKE_SUPERVISOR", "clean")
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sup, _ := waitPIDs(t, dir); sup != p.PID() {
		t.Errorf("after restart PID() = %d, want %d", p.PID(), sup)
	}
}

func TestProcessStartErrors(t *testing.T) {
	if err := NewProcess(nil, nil).Start(context.Background()); err == nil {
		t.Error("empty command started")
	}
	err := NewProcess([]string{"/nonexistent/opampsupervisor"}, nil).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/opampsupervisor") {
		t.Errorf("err = %v", err)
	}
}

func TestNewSelectsByControl(t *testing.T) {
	c, err := New(config.SupervisorConfig{Control: config.ControlProcess, Command: []string{"x"}}, nil)
	if _, ok := c.(*Process); !ok || err != nil {
		t.Errorf("process control gave %T, %v", c, err)
	}
	c, err = New(config.SupervisorConfig{Control: config.ControlService, Service: "opampsupervisor"}, nil)
	if s, ok := c.(*Service); !ok || err != nil || s.Name() != "opampsupervisor" {
		t.Errorf("service control gave %T, %v", c, err)
	}
	if _, err := New(config.SupervisorConfig{Control: "x"}, nil); err == nil {
		t.Error("unknown control accepted")
	}
}
