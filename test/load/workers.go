//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// One process holds at most RLIMIT_NOFILE sockets (20 000 here), so more
// WebSocket agents than that are simulated by worker processes, each a
// share of the hosts; the main process runs the phases as usual on a
// shadow sim of every agent (UIDs from the shared -seed) whose counters
// and upgrade times the workers report.

// workerStats is what a worker reports every half second.
type workerStats struct {
	Connected, Dials, DialErrors, Refused503, Refused429, RefusedOther, Disconnects    int64
	Sent, Received, Heartbeats, WriteErrors, BadFrames, ErrorResponses, FullStateAsked int64
	Offers, InstallsStarted, InstallsDone, Upgraded                                    int64
	PerInstance                                                                        []int
}

func (s *sim) snapshot() workerStats {
	st := &s.st
	return workerStats{
		Connected: st.connected.Load(), Dials: st.dials.Load(), DialErrors: st.dialErrors.Load(),
		Refused503: st.refused503.Load(), Refused429: st.refused429.Load(), RefusedOther: st.refusedOther.Load(),
		Disconnects: st.disconnects.Load(), Sent: st.sent.Load(), Received: st.received.Load(),
		Heartbeats: st.heartbeats.Load(), WriteErrors: st.writeErrors.Load(), BadFrames: st.badFrames.Load(),
		ErrorResponses: st.errorResponses.Load(), FullStateAsked: st.fullStateAsked.Load(), Offers: st.offers.Load(),
		InstallsStarted: st.installsStarted.Load(), InstallsDone: st.installsDone.Load(), Upgraded: st.upgraded.Load(),
		PerInstance: s.perInstance(),
	}
}

// runWorker is a worker process: it connects the agents of hosts
// [lo, hi), reports "s <json stats>" lines, and obeys "target V" (the
// version a rollout moves to), "times" (prints "t <index> <upgradedAt>
// <delay>" per upgraded collector, then "end") and "close" on stdin.
func runWorker(c config, hostRange, servers, token string, in io.Reader, out io.Writer) error {
	lo, hi, ok := strings.Cut(hostRange, ":")
	l, err1 := strconv.Atoi(lo)
	h, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || l < 0 || h > c.hosts || l >= h {
		return fmt.Errorf("-worker-hosts %q: want LO:HI within 0:%d", hostRange, c.hosts)
	}
	if _, err := raiseNoFile(); err != nil {
		return err
	}
	s := newSim(c, strings.Split(servers, ","), token, nil)
	var mu sync.Mutex // serialises out
	emit := func(format string, a ...any) {
		mu.Lock()
		fmt.Fprintf(out, format, a...)
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.heartbeats(ctx)
	for i := 2 * l; i < 2*h; i++ {
		var d time.Duration
		if c.rampRate > 0 {
			d = time.Duration(i-2*l) * time.Second / time.Duration(c.rampRate)
		}
		s.connectLater(s.agents[i], d)
	}
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			b, _ := json.Marshal(s.snapshot())
			emit("s %s\n", b)
		}
	}()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "target":
			s.target.Store(arg)
			for i := 2 * l; i < 2*h; i += 2 {
				s.agents[i].upgradedAt.Store(0)
				s.agents[i+1].offerAt.Store(0)
			}
		case "times":
			var b strings.Builder
			for i := 2 * l; i < 2*h; i += 2 {
				if at := s.agents[i].upgradedAt.Load(); at != 0 {
					fmt.Fprintf(&b, "t %d %d %d %d\n", i, at, s.agents[i].upDelay.Load(), s.agents[i+1].offerAt.Load())
				}
			}
			emit("%send\n", b.String())
		case "close":
			s.closeAll()
			return nil
		}
	}
	s.closeAll()
	return sc.Err()
}

// workerProc is the main process's handle on one worker.
type workerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	last  workerStats // guarded by mu
	ends  chan struct{}
}

// startWorkers starts c.workers processes over the hosts, feeding their
// reports into the shadow sim r.sim.
func (r *runner) startWorkers(servers []string, token string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for w := range r.c.workers {
		lo, hi := w*r.c.hosts/r.c.workers, (w+1)*r.c.hosts/r.c.workers
		args := []string{"-worker-hosts", fmt.Sprintf("%d:%d", lo, hi), "-servers", strings.Join(servers, ","), "-token", token,
			"-seed", strconv.FormatUint(r.c.seed, 10), "-n", strconv.Itoa(r.c.agents), "-heartbeat", r.c.heartbeat.String(),
			"-install-step", r.c.installStep.String(), "-from", r.sim.target.Load().(string),
			"-dial-concurrency", strconv.Itoa(r.c.dialConcurrency), "-source-addrs", strconv.Itoa(r.c.sourceAddrs),
			"-backoff", r.c.backoffBase.String(), "-backoff-cap", r.c.backoffCap.String(), "-ramp-rate", strconv.Itoa(r.c.rampRate)}
		cmd := exec.Command(self, args...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("worker %d: %w", w, err)
		}
		wp := &workerProc{cmd: cmd, stdin: stdin, ends: make(chan struct{}, 16)}
		r.workers = append(r.workers, wp)
		go r.readWorker(wp, stdout)
	}
	go r.aggregate()
	return nil
}

func (r *runner) readWorker(wp *workerProc, stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "s "):
			var st workerStats
			if json.Unmarshal([]byte(line[2:]), &st) == nil {
				wp.mu.Lock()
				wp.last = st
				wp.mu.Unlock()
			}
		case strings.HasPrefix(line, "t "):
			f := strings.Fields(line)
			i, _ := strconv.Atoi(f[1])
			at, _ := strconv.ParseInt(f[2], 10, 64)
			d, _ := strconv.ParseInt(f[3], 10, 64)
			if i >= 0 && i+1 < len(r.sim.agents) {
				r.sim.agents[i].upgradedAt.Store(at)
				r.sim.agents[i].upDelay.Store(d)
				if len(f) > 4 {
					o, _ := strconv.ParseInt(f[4], 10, 64)
					r.sim.agents[i+1].offerAt.Store(o)
				}
			}
		case line == "end":
			wp.ends <- struct{}{}
		}
	}
}

// aggregate keeps the shadow sim's counters at the workers' sums.
func (r *runner) aggregate() {
	for !r.sim.stopping.Load() {
		var sum workerStats
		per := make([]int, len(r.sim.urls))
		for _, wp := range r.workers {
			wp.mu.Lock()
			w := wp.last
			wp.mu.Unlock()
			sum.Connected += w.Connected
			sum.Dials += w.Dials
			sum.DialErrors += w.DialErrors
			sum.Refused503 += w.Refused503
			sum.Refused429 += w.Refused429
			sum.RefusedOther += w.RefusedOther
			sum.Disconnects += w.Disconnects
			sum.Sent += w.Sent
			sum.Received += w.Received
			sum.Heartbeats += w.Heartbeats
			sum.WriteErrors += w.WriteErrors
			sum.BadFrames += w.BadFrames
			sum.ErrorResponses += w.ErrorResponses
			sum.FullStateAsked += w.FullStateAsked
			sum.Offers += w.Offers
			sum.InstallsStarted += w.InstallsStarted
			sum.InstallsDone += w.InstallsDone
			sum.Upgraded += w.Upgraded
			for i, n := range w.PerInstance {
				if i < len(per) {
					per[i] += n
				}
			}
		}
		st := &r.sim.st
		st.connected.Store(sum.Connected)
		st.dials.Store(sum.Dials)
		st.dialErrors.Store(sum.DialErrors)
		st.refused503.Store(sum.Refused503)
		st.refused429.Store(sum.Refused429)
		st.refusedOther.Store(sum.RefusedOther)
		st.disconnects.Store(sum.Disconnects)
		st.sent.Store(sum.Sent)
		st.received.Store(sum.Received)
		st.heartbeats.Store(sum.Heartbeats)
		st.writeErrors.Store(sum.WriteErrors)
		st.badFrames.Store(sum.BadFrames)
		st.errorResponses.Store(sum.ErrorResponses)
		st.fullStateAsked.Store(sum.FullStateAsked)
		st.offers.Store(sum.Offers)
		st.installsStarted.Store(sum.InstallsStarted)
		st.installsDone.Store(sum.InstallsDone)
		st.upgraded.Store(sum.Upgraded)
		r.perInstanceMu.Lock()
		r.perInstanceCounts = per
		r.perInstanceMu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
}

// tellWorkers sends a command line to every worker.
func (r *runner) tellWorkers(line string) {
	for _, wp := range r.workers {
		fmt.Fprintln(wp.stdin, line)
	}
}

// collectTimes asks every worker for its collectors' upgrade times and
// waits until all have answered.
func (r *runner) collectTimes() {
	r.tellWorkers("times")
	for _, wp := range r.workers {
		select {
		case <-wp.ends:
		case <-time.After(time.Minute):
		}
	}
}

// stopWorkers closes every worker's agents and waits for it to exit.
func (r *runner) stopWorkers() {
	r.tellWorkers("close")
	for _, wp := range r.workers {
		wp.stdin.Close()
		done := make(chan struct{})
		go func() { wp.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			wp.cmd.Process.Kill()
			<-done
		}
	}
	r.workers = nil
}

// sampleGenerator is the load generator's CPU: this process and its workers.
func (r *runner) sampleGenerator() procSample {
	ps, _ := sampleProc(os.Getpid())
	for _, wp := range r.workers {
		if w, err := sampleProc(wp.cmd.Process.Pid); err == nil {
			ps.cpu += w.cpu
			ps.rssKB += w.rssKB
		}
	}
	return ps
}
