//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

type runner struct {
	c       config
	workers []*workerProc // -workers > 1: the processes simulating the agents

	perInstanceMu     sync.Mutex
	perInstanceCounts []int // guarded by perInstanceMu; the workers' agents per instance

	srv    *server   // the instance the API is asked (a running one)
	srvs   []*server // every instance
	sim    *sim
	out    io.Writer
	failed bool
}

func (r *runner) reportf(format string, args ...any) {
	fmt.Fprintf(r.out, format, args...)
}

func freeAddrs() (string, string, error) {
	var addrs []string
	for i := 0; i < 2; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", "", err
		}
		addrs = append(addrs, ln.Addr().String())
		defer ln.Close()
	}
	return addrs[0], addrs[1], nil
}

// waitFor polls cond every 200 ms until it holds, ctx ends or limit passes.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) bool {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
	return cond()
}

// serverOnline is myriarchd's own count of online agents (all kinds).
func (r *runner) serverOnline() int {
	v, err := r.srv.metric("myriarch_agents_connected")
	if err != nil {
		return -1
	}
	return int(v)
}

func (r *runner) allUp() bool {
	return int(r.sim.st.connected.Load()) == r.c.agents && r.serverOnline() == r.c.agents
}

func (r *runner) mem(label string) procSample {
	if len(r.srvs) > 1 {
		r.memInstances(label)
		return procSample{rssKB: rssAll(r.sampleAll())}
	}
	ps, _ := sampleProc(r.srv.pid())
	self, _ := sampleProc(os.Getpid())
	stack, _ := r.srv.metric("go_memstats_stack_inuse_bytes")
	heap, _ := r.srv.metric("go_memstats_heap_inuse_bytes")
	gor, _ := r.srv.metric("go_goroutines")
	live := r.liveHeap(r.srv, label)
	r.reportf("  %s: myriarchd RSS %.1f MiB (%.1f KB/agent; Go heap in use %.1f MiB, live %.1f MiB, stacks %.1f MiB, %.0f goroutines), load generator RSS %.1f MiB, %d goroutines\n",
		label, float64(ps.rssKB)/1024, float64(ps.rssKB)*1.024/float64(r.c.agents), heap/(1<<20), live/(1<<20), stack/(1<<20), gor, float64(self.rssKB)/1024, runtime.NumGoroutine())
	return ps
}

// liveHeap is s's live heap in bytes (0 when it cannot be read): after a
// memory sample, a collection (the heap profile's gc=1) and then the heap
// it left allocated. The profile is saved into -profile when given, named
// after the sample's label; its in-use figures are that same live heap.
func (r *runner) liveHeap(s *server, label string) float64 {
	path := ""
	if r.c.profileDir != "" {
		path = filepath.Join(r.c.profileDir, "heap-"+strings.ReplaceAll(label, " ", "-")+".pb.gz")
	}
	if err := s.saveProfile("heap?gc=1", path); err != nil {
		r.reportf("  heap profile: %v\n", err)
		return 0
	}
	if path != "" {
		r.reportf("  heap profile: %s\n", path)
	}
	live, _ := s.metric("go_memstats_heap_alloc_bytes")
	return live
}

func (r *runner) ramp(ctx context.Context) error {
	base := procSample{rssKB: rssAll(r.sampleAll())}
	r.reportf("## ramp to %d\n  myriarchd RSS before agents: %.1f MiB\n", r.c.agents, float64(base.rssKB)/1024)
	t0 := time.Now()
	for i, a := range r.sim.agents {
		if len(r.workers) > 0 {
			break // the workers connect their agents as they start
		}
		var d time.Duration
		if r.c.rampRate > 0 {
			d = time.Duration(i) * time.Second / time.Duration(r.c.rampRate)
		}
		r.sim.connectLater(a, d)
	}
	ok := waitFor(ctx, r.c.phaseTimeout, r.allUp)
	el := time.Since(t0)
	r.reportf("  all %d agents connected and online in myriarchd after %.1f s (%s)\n", r.c.agents, el.Seconds(), okStr(ok))
	r.counters()
	// Let the registry flush and offers settle before measuring memory.
	time.Sleep(5 * time.Second)
	ps := r.mem("after ramp")
	r.reportf("  RSS attributable to agents: %.1f KB/agent\n", float64(ps.rssKB-base.rssKB)*1.024/float64(r.c.agents))
	if !ok {
		return fmt.Errorf("ramp did not complete: %d connected here, %d online in myriarchd", r.sim.st.connected.Load(), r.serverOnline())
	}
	return nil
}

func (r *runner) steady(ctx context.Context) error {
	r.reportf("## steady state for %s (heartbeat %s)\n", r.c.steady, r.c.heartbeat)
	sent0 := r.sim.st.sent.Load()
	srv0 := r.metricAll("myriarch_opamp_messages_total")
	a := r.sampleAll()
	w0 := r.countersAll()
	pg0, hasPG := samplePostgres(r.c.postgresPID)
	self0 := r.sampleGenerator()
	r.sim.rtts.start()
	select {
	case <-ctx.Done():
		r.sim.rtts.stop()
		return ctx.Err()
	case <-time.After(r.c.steady):
	}
	rtts := r.sim.rtts.stop()
	b := r.sampleAll()
	w1 := r.countersAll()
	pg1, _ := samplePostgres(r.c.postgresPID)
	self1 := r.sampleGenerator()
	sent1 := r.sim.st.sent.Load()
	srv1 := r.metricAll("myriarch_opamp_messages_total")
	el := b[0].at.Sub(a[0].at)
	rate := float64(sent1-sent0) / el.Seconds()
	cpu := cpuAll(a, b)
	r.reportf("  myriarchd CPU %.1f%% of one core (%.1f µs per message at %.0f msg/s); load generator CPU %.1f%%\n",
		100*cpu, cpu*float64(el)/float64(time.Microsecond)/float64(max(1, sent1-sent0)), rate, 100*cpuShare(self0, self1))
	if hasPG {
		r.reportf("  PostgreSQL CPU %.1f%% of one core\n", 100*cpuShare(pg0, pg1))
	}
	r.reportf("  messages sent by agents %d, counted by myriarchd %.0f (difference %.0f: in flight)\n", sent1-sent0, srv1-srv0, float64(sent1-sent0)-(srv1-srv0))
	r.reportCounters("steady", w0, w1)
	r.reportRTTs("heartbeats", rtts)
	r.mem("steady")
	if r.sim.st.connected.Load() != int64(r.c.agents) {
		return fmt.Errorf("%d of %d agents connected at the end of the steady state", r.sim.st.connected.Load(), r.c.agents)
	}
	return nil
}

func (r *runner) storm(ctx context.Context) error {
	r.reportf("## reconnect storm: myriarchd restart, %d agents reconnect (jittered backoff %s..%s, Retry-After honoured)\n", r.c.agents, r.c.backoffBase, r.c.backoffCap)
	r503, r429 := r.sim.st.refused503.Load(), r.sim.st.refused429.Load()
	stopT := r.srv.stop()
	r.reportf("  graceful stop took %.1f s\n", stopT.Seconds())
	t0 := time.Now()
	if err := r.srv.start(); err != nil {
		return err
	}
	up := time.Now()
	ok := waitFor(ctx, r.c.phaseTimeout, r.allUp)
	el := time.Since(up)
	r.reportf("  myriarchd answering %.1f s after start; all %d agents back online %.1f s after that (%s); %d refused with 503, %d with 429\n",
		up.Sub(t0).Seconds(), r.c.agents, el.Seconds(), okStr(ok), r.sim.st.refused503.Load()-r503, r.sim.st.refused429.Load()-r429)
	r.counters()
	r.mem("after storm")
	if !ok {
		return fmt.Errorf("storm: %d connected here, %d online in myriarchd", r.sim.st.connected.Load(), r.serverOnline())
	}
	return nil
}

type fleetsJSON struct {
	Fleets []struct {
		Name          string `json:"name"`
		TargetVersion string `json:"targetVersion"`
		Rollout       struct {
			State string `json:"state"`
			Waves []struct {
				Total    int            `json:"total"`
				UpToDate int            `json:"upToDate"`
				Failed   int            `json:"failed"`
				States   map[string]int `json:"states"`
			} `json:"waves"`
		} `json:"rollout"`
	} `json:"fleets"`
}

func (r *runner) fleetCounts() (total, upToDate, failed int, states map[string]int) {
	var f fleetsJSON
	states = map[string]int{}
	if code, err := r.srv.api("GET", "/api/v1/fleets", nil, &f); err != nil || code != 200 {
		return -1, -1, -1, nil
	}
	for _, fl := range f.Fleets {
		for _, w := range fl.Rollout.Waves {
			total += w.Total
			upToDate += w.UpToDate
			failed += w.Failed
			for k, v := range w.States {
				states[k] += v
			}
		}
	}
	return
}

// rollout moves every collector to the other version; with kill, the
// leading instance is SIGKILLed once a quarter of the hosts are done (its
// agents reconnect to the others, another instance leads) and the rollout
// must still complete.
func (r *runner) rollout(ctx context.Context, kill bool) error {
	from, to := r.sim.target.Load().(string), r.c.toVersion
	if from == to {
		to = r.c.fromVersion
	}
	r.reportf("## rollout %s → %s across %d hosts (simulated install: 3 steps of %s ± 50%%)\n", from, to, r.c.hosts, r.c.installStep)
	if err := setTarget(r.srv.estate, to); err != nil {
		return err
	}
	r.sim.target.Store(to)
	if len(r.workers) > 0 {
		r.tellWorkers("target " + to)
	}
	up0 := r.sim.st.upgraded.Load()
	for _, a := range r.sim.agents {
		if !a.updater {
			a.upgradedAt.Store(0)
		} else {
			a.offerAt.Store(0)
		}
	}
	a0 := r.sampleAll()
	w0 := r.countersAll()
	m0, g0 := sampleMachine(), r.sampleGenerator()
	pg0, hasPG := samplePostgres(r.c.postgresPID)
	t0 := time.Now()
	for _, s := range r.running() {
		if code, err := s.api("POST", "/api/v1/estate/reload", nil, nil); err != nil || code != 200 {
			return fmt.Errorf("estate reload on %s: %d %v", s.adminAddr, code, err)
		}
	}
	reload := time.Since(t0)
	if kill {
		waitFor(ctx, r.c.phaseTimeout, func() bool { return int(r.sim.st.upgraded.Load()-up0) >= r.c.hosts/4 })
		victim, err := r.killOne()
		if err != nil {
			return err
		}
		r.reportf("  SIGKILLed #%d after %.1f s with %d/%d hosts done\n", victim, time.Since(t0).Seconds(), r.sim.st.upgraded.Load()-up0, r.c.hosts)
	}
	ok := waitFor(ctx, r.c.phaseTimeout, func() bool {
		return int(r.sim.st.upgraded.Load()-up0) >= r.c.hosts
	})
	hostsDone := time.Since(t0)
	var total, upd, failed int
	var states map[string]int
	apiOK := waitFor(ctx, time.Minute, func() bool {
		total, upd, failed, states = r.fleetCounts()
		return total == r.c.hosts && upd == r.c.hosts
	})
	apiDone := time.Since(t0)
	a1 := r.sampleAll()
	w1 := r.countersAll()
	m1, g1 := sampleMachine(), r.sampleGenerator()
	pg1, _ := samplePostgres(r.c.postgresPID)
	if len(r.workers) > 0 {
		r.collectTimes()
	}
	// Per host: time from the change to the collector reporting the new
	// version, minus that host's simulated download+install delay.
	var net []time.Duration
	var simMax time.Duration
	for _, a := range r.sim.agents {
		if a.updater {
			continue
		}
		at := a.upgradedAt.Load()
		if at == 0 {
			continue
		}
		d := time.Duration(a.upDelay.Load())
		simMax = max(simMax, d)
		net = append(net, time.Unix(0, at).Sub(t0)-d)
	}
	sort.Slice(net, func(i, j int) bool { return net[i] < net[j] })
	r.reportf("  estate reload answered in %.2f s; every collector reported %s after %.1f s (%s); the API showed %d/%d up_to_date after %.1f s (%s), failed %d, states %v\n",
		reload.Seconds(), to, hostsDone.Seconds(), okStr(ok), upd, total, apiDone.Seconds(), okStr(apiOK), failed, states)
	if len(net) > 0 {
		r.reportf("  with each host's simulated delay subtracted: median %.2f s, p99 %.2f s, max %.2f s (longest simulated delay %.2f s); wall minus longest delay %.1f s\n",
			pct(net, 50), pct(net, 99), net[len(net)-1].Seconds(), simMax.Seconds(), (hostsDone - simMax).Seconds())
	}
	// When each updater received the offer it installed from.
	var offered []time.Duration
	for _, a := range r.sim.agents {
		if at := a.offerAt.Load(); a.updater && at != 0 {
			offered = append(offered, time.Unix(0, at).Sub(t0))
		}
	}
	if len(offered) > 0 {
		sort.Slice(offered, func(i, j int) bool { return offered[i] < offered[j] })
		r.reportf("  offers reached %d updaters: median %.2f s, p99 %.2f s, last %.2f s after the change\n",
			len(offered), pct(offered, 50), pct(offered, 99), offered[len(offered)-1].Seconds())
	}
	r.reportf("  myriarchd CPU during the rollout %.1f%% of one core; load generator %.1f%%", 100*cpuAll(a0, a1), 100*cpuShare(g0, g1))
	if hasPG {
		r.reportf("; PostgreSQL %.1f%%", 100*cpuShare(pg0, pg1))
	}
	r.reportf("; the machine's %d CPUs %.0f%% busy\n", runtime.NumCPU(), 100*busyShare(m0, m1))
	r.reportCounters("rollout", w0, w1)
	r.counters()
	if !apiOK {
		r.diagnose()
	}
	if !ok || !apiOK {
		return fmt.Errorf("rollout incomplete: %d/%d hosts reported %s, API %d/%d up_to_date", r.sim.st.upgraded.Load()-up0, r.c.hosts, to, upd, total)
	}
	return nil
}

// diagnose prints a few collectors whose offer is not up_to_date, with
// what the server knows of them and their updater.
func (r *runner) diagnose() {
	var list struct {
		Agents []struct {
			InstanceUID string            `json:"instanceUid"`
			Online      bool              `json:"online"`
			Identifying map[string]string `json:"identifying"`
			Offer       *struct {
				State   string `json:"state"`
				Version string `json:"version"`
			} `json:"offer"`
			Pairing struct {
				State   string  `json:"state"`
				Updater *string `json:"updater"`
			} `json:"pairing"`
			Events []struct {
				Time    string `json:"time"`
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"events"`
		} `json:"agents"`
	}
	if code, err := r.srv.api("GET", "/api/v1/agents?kind=collector", nil, &list); err != nil || code != 200 {
		r.reportf("  diagnose: %d %v\n", code, err)
		return
	}
	shown := 0
	for _, a := range list.Agents {
		if a.Offer == nil || a.Offer.State == "up_to_date" || shown >= 3 {
			continue
		}
		shown++
		r.reportf("  not up_to_date: %s online=%v version=%s offer=%+v pairing=%+v\n", a.InstanceUID, a.Online, a.Identifying["service.version"], *a.Offer, a.Pairing.State)
		for _, e := range a.Events[max(0, len(a.Events)-6):] {
			r.reportf("    %s %s %s\n", e.Time, e.Type, e.Message)
		}
	}
}

func pct(d []time.Duration, p int) float64 {
	return d[min(len(d)-1, len(d)*p/100)].Seconds()
}

// churnPhase closes churn-rate of the agents per minute at random (each
// reconnects after a short delay, reporting only a compact first message).
func (r *runner) churnPhase(ctx context.Context) error {
	if r.c.transport == "http" || len(r.workers) > 0 {
		r.reportf("## churn: not applicable to plain-HTTP polling or agents in worker processes\n")
		return nil
	}
	perSec := r.c.churnPerMin * float64(r.c.agents) / 60
	r.reportf("## churn: %.1f%% of agents reconnecting per minute (%.1f/s) for %s\n", 100*r.c.churnPerMin, perSec, r.c.churn)
	a := r.sampleAll()
	d0 := r.sim.st.disconnects.Load()
	end := time.Now().Add(r.c.churn)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	carry := 0.0
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		carry += perSec
		for ; carry >= 1; carry-- {
			ag := r.sim.agents[rand.N(len(r.sim.agents))]
			ag.mu.Lock()
			ws := ag.ws
			ag.reconnectIn = time.Duration(100+rand.N(2000)) * time.Millisecond
			ag.mu.Unlock()
			if ws != nil {
				_ = ws.Close()
			}
		}
	}
	b := r.sampleAll()
	ok := waitFor(ctx, time.Minute, r.allUp)
	r.reportf("  %d reconnects; myriarchd CPU %.1f%% of one core; all back online: %s\n", r.sim.st.disconnects.Load()-d0, 100*cpuAll(a, b), okStr(ok))
	r.mem("after churn")
	if !ok {
		return fmt.Errorf("churn: %d connected here, %d online in myriarchd", r.sim.st.connected.Load(), r.serverOnline())
	}
	return nil
}

func (r *runner) counters() {
	s := &r.sim.st
	r.reportf("  counters: dials %d, dial errors %d, 503 %d, 429 %d, other refusals %d, disconnects %d, sent %d, received %d, write errors %d, bad frames %d, error responses %d, full state asked %d, offers %d, installs %d/%d, HTTP queue full %d\n",
		s.dials.Load(), s.dialErrors.Load(), s.refused503.Load(), s.refused429.Load(), s.refusedOther.Load(), s.disconnects.Load(),
		s.sent.Load(), s.received.Load(), s.writeErrors.Load(), s.badFrames.Load(), s.errorResponses.Load(), s.fullStateAsked.Load(),
		s.offers.Load(), s.installsDone.Load(), s.installsStarted.Load(), s.queueFull.Load())
}

type agentsJSON struct {
	Agents []struct {
		InstanceUID string            `json:"instanceUid"`
		Kind        string            `json:"kind"`
		Online      bool              `json:"online"`
		Identifying map[string]string `json:"identifying"`
		Pairing     struct {
			State string `json:"state"`
		} `json:"pairing"`
	} `json:"agents"`
}

// final checks nothing was lost: every simulated agent is in the API with
// the right kind, online, paired, and collectors on the fleet's version.
func (r *runner) final(ctx context.Context) {
	r.reportf("## final check\n")
	var list agentsJSON
	t0 := time.Now()
	code, err := r.srv.api("GET", "/api/v1/agents", nil, &list)
	if err != nil || code != 200 {
		r.reportf("  GET /api/v1/agents: %d %v\n", code, err)
		r.failed = true
		return
	}
	r.reportf("  GET /api/v1/agents returned %d agents in %.2f s\n", len(list.Agents), time.Since(t0).Seconds())
	byUID := map[string]int{}
	for i, a := range list.Agents {
		byUID[a.InstanceUID] = i
	}
	target := r.sim.target.Load().(string)
	var missing, offline, wrongKind, unpaired, oldVersion int
	for _, a := range r.sim.agents {
		i, ok := byUID[a.uid.String()]
		if !ok {
			missing++
			continue
		}
		j := list.Agents[i]
		kind := "collector"
		if a.updater {
			kind = "updater"
		}
		if j.Kind != kind {
			wrongKind++
		}
		if !j.Online {
			offline++
		}
		if j.Pairing.State != "linked" {
			unpaired++
		}
		if !a.updater && j.Identifying["service.version"] != target {
			oldVersion++
		}
	}
	extra := len(list.Agents) - (r.c.agents - missing)
	r.reportf("  missing %d, unexpected extra %d, offline %d, wrong kind %d, not linked %d, collectors not on %s: %d\n",
		missing, extra, offline, wrongKind, unpaired, target, oldVersion)
	if total, upd, failed, states := r.fleetCounts(); total != upd {
		r.reportf("  fleet: %d/%d collectors up_to_date (failed %d, states %v)\n", upd, total, failed, states)
		r.failed = true
	} else {
		r.reportf("  fleet: %d/%d collectors up_to_date\n", upd, total)
	}
	r.reportf("  myriarchd rejects since its last start: %s\n", r.srv.metricLines("myriarch_opamp_rejects_total"))
	if missing+extra+offline+wrongKind+unpaired+oldVersion > 0 {
		r.failed = true
	}
	if len(r.workers) > 0 {
		r.stopWorkers()
	}
	r.sim.closeAll()
	var stopT time.Duration
	for _, srv := range r.running() {
		stopT = max(stopT, srv.stop())
	}
	r.reportf("  graceful stop with %d agents took %.1f s\n", r.c.agents, stopT.Seconds())
	for _, srv := range r.srvs {
		logs, err := os.ReadFile(srv.logPath)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(logs)), "\n")
		var warn, errs int
		seen := map[string]int{}
		for _, l := range lines {
			switch {
			case strings.Contains(l, `"level":"ERROR"`):
				errs++
			case strings.Contains(l, `"level":"WARN"`):
				warn++
			default:
				continue
			}
			if i := strings.Index(l, `"msg":"`); i >= 0 {
				m := l[i+7:]
				if j := strings.Index(m, `"`); j >= 0 {
					seen[m[:j]]++
				}
			}
		}
		r.reportf("  %s: %d errors, %d warnings %v\n", filepath.Base(srv.logPath), errs, warn, seen)
	}
	_ = ctx
}

func okStr(ok bool) string {
	if ok {
		return "ok"
	}
	return "TIMED OUT"
}

// metricAll sums a metric over the running instances.
func (r *runner) metricAll(name string) float64 {
	var sum float64
	for _, s := range r.running() {
		v, _ := s.metric(name)
		sum += v
	}
	return sum
}
