package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// adoptOrphans makes this process a child subreaper: descendants whose
// parent exits are reparented here instead of to init.
func adoptOrphans() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// killSurvivors reaps the exited children of this process, kills the ones
// still running (and their process groups), and describes those.
func killSurvivors() []string {
	var left []string
	for _, c := range children() {
		if c.state == "Z" {
			continue
		}
		left = append(left, fmt.Sprintf("pid %d: %s", c.pid, c.cmdline))
		if pgid, err := syscall.Getpgid(c.pid); err == nil && pgid != syscall.Getpgrp() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(c.pid, syscall.SIGKILL)
	}
	// Reap what was killed and every zombie adopted along the way, briefly:
	// a killed process needs a moment to become a zombie.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err != nil { // ECHILD: nothing left
			break
		}
		if pid == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return left
}

// killDescendants kills every process descended from this one (children,
// adopted orphans and theirs), with their process groups, and describes
// them.
func killDescendants() []string {
	self := os.Getpid()
	parent := map[int]int{}
	all := map[int]child{}
	for _, p := range processes() {
		parent[p.pid] = p.ppid
		all[p.pid] = p.child
	}
	var out []string
	for pid := range parent {
		for a := parent[pid]; a > 1; a = parent[a] {
			if a != self {
				continue
			}
			out = append(out, fmt.Sprintf("pid %d: %s", pid, all[pid].cmdline))
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid != syscall.Getpgrp() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			break
		}
	}
	return out
}

type child struct {
	pid     int
	state   string
	cmdline string
}

// children lists the processes whose parent is this process, from /proc.
func children() []child {
	self := os.Getpid()
	var out []child
	for _, p := range processes() {
		if p.ppid == self {
			out = append(out, p.child)
		}
	}
	return out
}

type process struct {
	child
	ppid int
}

// processes lists every process of the host, from /proc.
func processes() []process {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []process
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pid, _ := strconv.Atoi(strings.Fields(s)[0])
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		out = append(out, process{child: child{pid: pid, state: f[0], cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))}, ppid: ppid})
	}
	return out
}
