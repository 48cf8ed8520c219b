//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// reconnectPhase closes the sockets of reconnect-fraction of the agents at
// once, as a network blip or a load balancer's restart does; each dials
// again within a second (then backs off as refused). Meanwhile the other
// agents keep their heartbeats, and the round trips of those show whether
// the admission gate keeps them answered while the handshakes (over TLS:
// full handshakes) come in. It reports how long until every agent is back
// and those round trips.
func (r *runner) reconnectPhase(ctx context.Context) error {
	if r.c.transport == "http" || len(r.workers) > 0 {
		r.reportf("## reconnect: not applicable to plain-HTTP polling or agents in worker processes\n")
		return nil
	}
	agents := r.sim.agents
	n := int(r.c.reconnectFraction * float64(len(agents)))
	r.reportf("## reconnect: %d agents' sockets closed at once, each dialling again within 1 s; the other %d keep their heartbeats\n", n, len(agents)-n)
	drop := rand.Perm(len(agents))[:n]
	for _, i := range drop {
		agents[i].dropped.Store(true)
	}
	defer func() {
		for _, i := range drop {
			agents[i].dropped.Store(false)
		}
	}()
	r503 := r.sim.st.refused503.Load()
	d0 := r.sim.st.disconnects.Load()
	a := r.sampleAll()
	r.sim.rtts.start()
	start := time.Now()
	for _, i := range drop {
		ag := agents[i]
		ag.mu.Lock()
		ws := ag.ws
		ag.reconnectIn = time.Duration(rand.N(1000)) * time.Millisecond
		ag.mu.Unlock()
		if ws != nil {
			_ = ws.Close()
		}
	}
	closed := waitFor(ctx, time.Minute, func() bool { return r.sim.st.disconnects.Load()-d0 >= int64(n) })
	ok := closed && waitFor(ctx, r.c.phaseTimeout, r.allUp)
	took := time.Since(start)
	rtts := r.sim.rtts.stop()
	b := r.sampleAll()
	r.reportf("  all %d back online %.1f s after the close (%s); %d refused with 503; myriarchd CPU %.1f%% of one core\n",
		n, took.Seconds(), okStr(ok), r.sim.st.refused503.Load()-r503, 100*cpuAll(a, b))
	r.reportRTTs("heartbeats of the agents left connected meanwhile", rtts)
	r.mem("after reconnect")
	if !ok {
		return fmt.Errorf("reconnect: %d connected here, %d online in myriarchd", r.sim.st.connected.Load(), r.serverOnline())
	}
	return nil
}

// reportRTTs reports heartbeat round trips (sorted).
func (r *runner) reportRTTs(what string, d []time.Duration) {
	if len(d) == 0 {
		r.reportf("  %s: none answered\n", what)
		return
	}
	ms := func(p int) float64 { return float64(d[min(len(d)-1, len(d)*p/100)]) / float64(time.Millisecond) }
	r.reportf("  %s: %d answered; round trip median %.1f ms, p99 %.1f ms, max %.1f ms\n",
		what, len(d), ms(50), ms(99), float64(d[len(d)-1])/float64(time.Millisecond))
}
