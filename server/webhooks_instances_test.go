package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/notify"
)

// flaky answers 503 while down, else passes to the receiver.
type flaky struct {
	mu   sync.Mutex
	down bool // guarded by mu
	next http.Handler
	seen map[string]int // delivery ids received, down or not; guarded by mu
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	down := f.down
	f.seen[r.Header.Get("X-Myriarch-Delivery")]++
	f.mu.Unlock()
	if down {
		http.Error(w, "receiver down", http.StatusServiceUnavailable)
		return
	}
	f.next.ServeHTTP(w, r)
}

func (f *flaky) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

// Six instances on one PostgreSQL: what happens to agents connected to
// any of them is sent to the webhook once (each failed collector listed
// in one body, the pause said once), while the receiver is down the
// deliveries wait in the store, and after the leader stops the next
// leader delivers them.
func TestWebhooksOnceAcrossInstances(t *testing.T) {
	secret := "0123456789abcdef-webhook"
	rc := &hookReceiver{secret: []byte(secret)}
	fl := &flaky{next: rc, seen: map[string]int{}, down: true}
	hook := httptest.NewServer(fl)
	defer hook.Close()
	est := newEstate(t)
	est.addVersion("0.149.0")
	est.addVersion("0.149.1")
	est.mkdir("notifications")
	est.write("ops.secret", secret)
	est.write("notifications/ops.yaml", "url: "+hook.URL+"\nsecretFile: ops.secret\nevents: [offer_failed, rollout_paused, agent_offline]\n")
	est.fleet("edge", "0.149.1", "offlineAfter: 1s\nrollout: {maxFailures: 2}\n")
	sh := startSharing(t, 6, est)
	lead := sh.leader()
	f := sh.followers(lead)
	var pairs []hostPair
	for i, host := range []string{"h1", "h2", "h3"} {
		pairs = append(pairs, sh.pair(host, f[i], f[i+1]))
	}
	for _, p := range pairs {
		offer := p.upd.waitOffer(p.host, func(*protobufs.PackagesAvailable) bool { return true })
		p.upd.report(offer, pkgName, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, "bad archive on "+p.host)
	}
	for _, p := range pairs {
		sh.every(p.col, "failed", offerState("failed"))
	}
	// A collector leaves an instance that does not lead.
	if err := pairs[0].colc.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	events := func(ts *testServer, query string) map[string]int {
		code, body := ts.api("GET", "/api/v1/notifications/deliveries?"+query, nil)
		var got notify.DeliveriesJSON
		if code != 200 || json.Unmarshal(body, &got) != nil {
			t.Fatalf("deliveries: %d %s", code, body)
		}
		m := map[string]int{}
		for _, d := range got.Deliveries {
			m[d.Event]++
		}
		return m
	}
	testkit.WaitFor(t, "the deliveries stored, failing", func() bool {
		m := events(lead, "failed=true&pending=true")
		return m["offer_failed"] > 0 && m["rollout_paused"] > 0 && m["agent_offline"] > 0
	})

	// The leader stops; the next one delivers what waits, once the
	// receiver is back.
	lead.stop()
	next := sh.leader(f...)
	fl.setDown(false)
	rc.wait(t, "offer_failed")
	rc.wait(t, "rollout_paused")
	rc.wait(t, "agent_offline")
	testkit.WaitFor(t, "the outbox settled", func() bool { return len(events(next, "pending=true")) == 0 })
	// Nothing is pending any more: nothing more is sent.

	rc.mu.Lock()
	defer rc.mu.Unlock()
	agents := map[string][]string{}
	ids := map[string]int{}
	for _, b := range rc.bodies {
		ids[b.ID]++
		for _, it := range b.Items {
			agents[b.Event] = append(agents[b.Event], it.Agent)
		}
		if b.Event == "rollout_paused" && len(b.Items) != 1 {
			t.Errorf("rollout_paused body lists %d items", len(b.Items))
		}
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("delivery %s accepted %d times", id, n)
		}
	}
	var want []string
	for _, p := range pairs {
		want = append(want, p.col.String())
	}
	sort.Strings(want)
	got := agents["offer_failed"]
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("offer_failed agents %v, want each of %v once", got, want)
		for _, b := range rc.bodies {
			if b.Event == "offer_failed" {
				t.Logf("body %s: first %s, count %d, items %+v", b.ID, b.First.Format(time.RFC3339Nano), b.Count, b.Items)
			}
		}
	}
	if n := len(agents["rollout_paused"]); n != 1 {
		t.Errorf("rollout_paused said %d times", n)
	}
	if a := agents["agent_offline"]; len(a) != 1 || a[0] != pairs[0].col.String() {
		t.Errorf("agent_offline for %v, want once for %s", a, pairs[0].col)
	}
}
