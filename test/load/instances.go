//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Several myriarchd instances on one PostgreSQL store: samples over all of
// them, the store's own cost, and the fault of one instance killed.

// running are the instances whose process runs.
func (r *runner) running() []*server {
	var out []*server
	for _, s := range r.srvs {
		if s.cmd != nil {
			out = append(out, s)
		}
	}
	return out
}

// sampleAll samples every running instance, in r.srvs order (zero for a
// stopped one).
func (r *runner) sampleAll() []procSample {
	out := make([]procSample, len(r.srvs))
	for i, s := range r.srvs {
		out[i].at = time.Now()
		if s.cmd != nil {
			out[i], _ = sampleProc(s.pid())
		}
	}
	return out
}

// cpuAll is the CPU the instances used between two samples, in cores.
func cpuAll(a, b []procSample) float64 {
	var cpu time.Duration
	for i := range a {
		if b[i].cpu >= a[i].cpu {
			cpu += b[i].cpu - a[i].cpu
		}
	}
	return float64(cpu) / float64(b[0].at.Sub(a[0].at))
}

func rssAll(s []procSample) (kb int64) {
	for _, p := range s {
		kb += p.rssKB
	}
	return kb
}

// samplePostgres sums the postmaster's and its children's proportional
// set size (shared buffers counted once across the backends) and CPU.
func samplePostgres(pid int) (procSample, bool) {
	if pid <= 0 {
		return procSample{}, false
	}
	ps := procSample{at: time.Now()}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		if ppid, _ := strconv.Atoi(f[1]); n != pid && ppid != pid {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		if n == pid {
			// Backends that ended (an instance's connections closed) took
			// their time with them; the postmaster reaped them into its
			// children's times, so what they used still counts.
			cut, _ := strconv.ParseInt(f[13], 10, 64)
			cst, _ := strconv.ParseInt(f[14], 10, 64)
			ut, st = ut+cut, st+cst
		}
		ps.cpu += time.Duration(ut+st) * (time.Second / 100)
		if rollup, err := os.ReadFile(filepath.Join("/proc", e.Name(), "smaps_rollup")); err == nil {
			for _, line := range strings.Split(string(rollup), "\n") {
				if strings.HasPrefix(line, "Pss:") {
					kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
					ps.rssKB += kb
				}
			}
		}
	}
	return ps, true
}

// memInstances reports each instance's RSS per agent connected to it, and
// PostgreSQL's memory.
func (r *runner) memInstances(label string) {
	per := r.sim.perInstance()
	if len(r.workers) > 0 {
		r.perInstanceMu.Lock()
		per = append(make([]int, 0, len(r.srvs)), r.perInstanceCounts...)
		r.perInstanceMu.Unlock()
		for len(per) < len(r.srvs) {
			per = append(per, 0)
		}
	}
	var line []string
	worst := 0.0
	for i, s := range r.sampleAll() {
		if r.srvs[i].cmd == nil {
			line = append(line, fmt.Sprintf("#%d down", i))
			continue
		}
		kb := float64(s.rssKB) * 1.024 / float64(max(1, per[i]))
		worst = max(worst, kb)
		heap, _ := r.srvs[i].metric("go_memstats_heap_inuse_bytes")
		live := r.liveHeap(r.srvs[i], fmt.Sprintf("%s-%d", label, i))
		line = append(line, fmt.Sprintf("#%d %.1f MiB (heap in use %.1f, live %.1f) / %d agents = %.1f KB",
			i, float64(s.rssKB)/1024, heap/(1<<20), live/(1<<20), per[i], kb))
	}
	r.reportf("  %s: per instance RSS per agent connected to it: %s (worst %.1f KB/agent)\n", label, strings.Join(line, "; "), worst)
	if pg, ok := samplePostgres(r.c.postgresPID); ok {
		r.reportf("  %s: PostgreSQL PSS %.1f MiB (postmaster and backends)\n", label, float64(pg.rssKB)/1024)
	}
}

// leaderIndex is the instance that says it leads (-1: none answers so).
func (r *runner) leaderIndex() int {
	for i, s := range r.srvs {
		if s.cmd == nil {
			continue
		}
		var st struct {
			Leading bool `json:"leading"`
		}
		if code, err := s.api("GET", "/api/v1/cluster", nil, &st); err == nil && code == 200 && st.Leading {
			return i
		}
	}
	return -1
}

// killOne SIGKILLs the leading instance (the last one if none leads) and
// moves the runner's API calls to another instance.
func (r *runner) killOne() (int, error) {
	if len(r.running()) < 2 {
		return -1, fmt.Errorf("killing an instance needs -instances ≥ 2")
	}
	victim := r.leaderIndex()
	if victim < 0 {
		victim = len(r.srvs) - 1
	}
	r.srvs[victim].kill()
	for _, s := range r.srvs {
		if s.cmd != nil {
			r.srv = s
			break
		}
	}
	return victim, nil
}

// kill: in steady state, SIGKILL one instance (the leader): its agents
// reconnect to the others, another instance leads; then it starts again.
func (r *runner) kill(ctx context.Context) error {
	r.reportf("## SIGKILL of one instance in steady state\n")
	d0 := r.sim.st.disconnects.Load()
	t0 := time.Now()
	victim, err := r.killOne()
	if err != nil {
		return err
	}
	// The workers' counts arrive every half second: first see the drop.
	waitFor(ctx, 5*time.Second, func() bool { return int(r.sim.st.connected.Load()) < r.c.agents })
	ok := waitFor(ctx, r.c.phaseTimeout, func() bool { return int(r.sim.st.connected.Load()) == r.c.agents })
	back := time.Since(t0)
	newLeader := -1
	led := waitFor(ctx, time.Minute, func() bool { newLeader = r.leaderIndex(); return newLeader >= 0 })
	r.reportf("  killed #%d; %d agents disconnected, all %d connected to the others after %.1f s (%s); leader now #%d (%s, %.1f s)\n",
		victim, r.sim.st.disconnects.Load()-d0, r.c.agents, back.Seconds(), okStr(ok), newLeader, okStr(led), time.Since(t0).Seconds())
	online := waitFor(ctx, r.c.phaseTimeout, r.allUp)
	r.reportf("  every agent online in #%d's view: %s\n", indexOf(r.srvs, r.srv), okStr(online))
	r.memInstances("after the kill")
	if err := r.srvs[victim].start(); err != nil {
		return err
	}
	r.reportf("  #%d started again\n", victim)
	if !ok || !led || !online {
		return fmt.Errorf("after killing #%d: %d connected, leader %d", victim, r.sim.st.connected.Load(), newLeader)
	}
	return nil
}

func indexOf(srvs []*server, s *server) int {
	for i := range srvs {
		if srvs[i] == s {
			return i
		}
	}
	return -1
}

// kill ends the process at once (SIGKILL to its process group).
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// instanceCounters are what an instance's store pool counted of waits for a
// connection (how many acquires waited, and for how long in all), and the
// time it spent applying the other instances' changes and its full
// reloads of them.
type instanceCounters struct {
	waited  float64
	wait    float64 // seconds
	busy    float64 // seconds
	resyncs float64
}

// countersAll reads every running instance's counters, in r.srvs order.
func (r *runner) countersAll() []instanceCounters {
	out := make([]instanceCounters, len(r.srvs))
	for i, s := range r.srvs {
		if s.cmd != nil {
			out[i].waited, _ = s.metric("myriarch_store_acquires_waited_total")
			out[i].wait, _ = s.metric("myriarch_store_acquire_wait_seconds_total")
			out[i].busy, _ = s.metric("myriarch_cluster_apply_seconds_total")
			out[i].resyncs, _ = s.metric("myriarch_cluster_resyncs_total")
		}
	}
	return out
}

// reportCounters reports, on PostgreSQL, between two readings: the waits
// for a store connection (a pool too small or a database too slow for
// what an instance asks of it), and the time each instance spent applying
// the others' changes (near the time passed: it falls behind them) with
// its full reloads.
func (r *runner) reportCounters(phase string, a, b []instanceCounters) {
	if !strings.HasPrefix(r.c.store, "postgres") {
		return
	}
	var waits, busy []string
	for i := range a {
		if r.srvs[i].cmd == nil {
			continue
		}
		waits = append(waits, fmt.Sprintf("#%d %.0f (%.2f s)", i, b[i].waited-a[i].waited, b[i].wait-a[i].wait))
		busy = append(busy, fmt.Sprintf("#%d %.1f s (%.0f)", i, b[i].busy-a[i].busy, b[i].resyncs-a[i].resyncs))
	}
	r.reportf("  %s: acquires of a store connection that waited (time waited): %s; leader #%d\n", phase, strings.Join(waits, ", "), r.leaderIndex())
	r.reportf("  %s: time applying the other instances' changes (full reloads): %s\n", phase, strings.Join(busy, ", "))
}
