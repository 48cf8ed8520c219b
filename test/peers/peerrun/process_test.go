//go:build linux

package peerrun

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gone reports whether pid no longer runs (absent or a zombie).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if gone(pid) {
			return
		}
	}
	t.Errorf("pid %d still runs", pid)
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("%s never written", path)
	return 0
}

func TestStopInterruptsThenKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	childPid := filepath.Join(dir, "child.pid")
	// The shell ignores SIGINT, like a supervisor that will not stop; its
	// child stands for the collector it started.
	p, err := Start("/bin/sh", []string{"-c", `trap "" INT; sleep 300 & echo $! > ` + childPid + `; echo started; wait`}, nil, filepath.Join(dir, "log", "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	child := readPid(t, childPid)
	if pgid, _ := syscall.Getpgid(p.Pid()); pgid != p.Pid() {
		t.Errorf("process group %d, want its own (%d)", pgid, p.Pid())
	}
	if pgid, _ := syscall.Getpgid(child); pgid != p.Pid() {
		t.Errorf("child in group %d, want %d", pgid, p.Pid())
	}
	err = p.Stop(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop of a process ignoring SIGINT: err = %v, want it reported as killed", err)
	}
	waitGone(t, p.Pid())
	waitGone(t, child)
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	out, _ := os.ReadFile(p.LogPath)
	if !strings.Contains(string(out), "started") {
		t.Errorf("log %q lacks the process output", out)
	}
}

func TestStopCleanOnSIGINT(t *testing.T) {
	dir := t.TempDir()
	p, err := Start("/bin/sleep", []string{"300"}, nil, filepath.Join(dir, "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("Stop of a process that exits on SIGINT: %v", err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	if p.Err() == nil {
		t.Error("a process killed by SIGINT reported success")
	}
}

func TestKill(t *testing.T) {
	p, err := Start("/bin/sleep", []string{"300"}, nil, filepath.Join(t.TempDir(), "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	waitGone(t, p.Pid())
	if err := p.Interrupt(); err != nil {
		t.Errorf("Interrupt after exit: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Start(filepath.Join(dir, "missing"), nil, nil, filepath.Join(dir, "out.log")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing executable: err = %v", err)
	}
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	if _, err := Start("/bin/true", nil, nil, filepath.Join(blocker, "out.log")); err == nil {
		t.Error("log under a regular file: no error")
	}
}
