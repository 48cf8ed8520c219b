package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/notify"
)

// hookReceiver is a webhook receiver with its own check of the signature
// (crypto/hmac over "timestamp.body", not notify's code).
type hookReceiver struct {
	secret []byte
	mu     sync.Mutex
	bodies []notify.Body // guarded by mu
	bad    []string      // guarded by mu
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	mac := hmac.New(sha256.New, h.secret)
	io.WriteString(mac, r.Header.Get("X-Myriarch-Timestamp")+".")
	mac.Write(raw)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	var b notify.Body
	err := json.Unmarshal(raw, &b)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-Myriarch-Signature"))) || err != nil || b.ID != r.Header.Get("X-Myriarch-Delivery") {
		h.bad = append(h.bad, string(raw))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	h.bodies = append(h.bodies, b)
}

// wait returns the first body of event, waiting for it.
func (h *hookReceiver) wait(t *testing.T, event string) notify.Body {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		for _, b := range h.bodies {
			if b.Event == event {
				h.mu.Unlock()
				return b
			}
		}
		bad := len(h.bad)
		h.mu.Unlock()
		if bad > 0 {
			t.Fatalf("bodies failed the signature check: %v", h.bad)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s body", event)
	return notify.Body{}
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.bodies)
}

// Every notification event that one myriarchd observes reaches a webhook
// as a signed body naming the fleet and the agents, and the outbox shows
// each delivery.
func TestWebhooksTellWhatHappens(t *testing.T) {
	secret := "0123456789abcdef-webhook"
	rc := &hookReceiver{secret: []byte(secret)}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	est := newEstate(t)
	est.addVersion("0.149.1")
	est.mkdir("notifications")
	est.write("ops.secret", secret+"\n")
	est.write("notifications/ops.yaml", "url: "+hook.URL+"/hook\nsecretFile: ops.secret\nevents: [offer_failed, rollout_paused, rollout_resumed, agent_offline, "+
		"estate_reload_failed, self_update_rolled_back]\nfleets: [edge]\n")
	est.fleet("edge", "0.149.1", "offlineAfter: 1s\nrollout: {maxFailures: 0}\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir; o.NotificationWindow = 200 * time.Millisecond })
	tok := ts.createToken("edge", nil)
	col, _ := ts.startCollector(tok.Token, "a", "0.149.0")
	upd := ts.startUpdater(tok.Token, col, "a", "binary")
	ts.waitAgent(col, "linked", func(x admin.Agent) bool { return pairingOf(x)["state"] == "linked" })

	// A failed offer pauses the rollout (maxFailures 0): two bodies.
	offer := upd.waitOffer("the offer", func(*protobufs.PackagesAvailable) bool { return true })
	upd.report(offer, pkgName, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, "checksum mismatch")
	failed := rc.wait(t, "offer_failed")
	if failed.Fleet != "edge" || failed.Count != 1 || failed.Items[0].Agent != col.String() || !strings.Contains(failed.Items[0].Message, "checksum mismatch") {
		t.Fatalf("offer_failed: %+v", failed)
	}
	if p := rc.wait(t, "rollout_paused"); p.Fleet != "edge" || !strings.Contains(p.Items[0].Message, "paused after 1 failed offers") {
		t.Fatalf("rollout_paused: %+v", p)
	}
	if code, body := ts.api("POST", "/api/v1/fleets/edge/resume", nil); code != 200 {
		t.Fatalf("resume: %d %s", code, body)
	}
	rc.wait(t, "rollout_resumed")

	// The updater reports its own package failed: said with the fleet of
	// the collector it looks after.
	self := &protobufs.PackageStatuses{Packages: map[string]*protobufs.PackageStatus{"myriarch-updater": {
		Name: "myriarch-updater", AgentHasVersion: "0.1.0", ServerOfferedVersion: "0.2.0",
		Status: protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, ErrorMessage: "the new updater did not start: rolled back after 3 starts",
	}}, ServerProvidedAllPackagesHash: offer.AllPackagesHash}
	if err := upd.client.SetPackageStatuses(self); err != nil {
		t.Fatal(err)
	}
	su := rc.wait(t, "self_update_rolled_back")
	if su.Fleet != "edge" || su.Items[0].Agent != upd.uid.String() || !strings.Contains(su.Items[0].Message, "self-update to 0.2.0 failed") {
		t.Fatalf("self_update_rolled_back: %+v", su)
	}

	// A collector offline for longer than offlineAfter.
	off, offClient := ts.startCollector(tok.Token, "b", "0.149.1")
	ts.waitAgent(off, "online", func(x admin.Agent) bool { return x.Online })
	if err := offClient.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o := rc.wait(t, "agent_offline"); o.Fleet != "edge" || o.Items[0].Agent != off.String() || !strings.Contains(o.Items[0].Message, "offlineAfter is 1s") {
		t.Fatalf("agent_offline: %+v", o)
	}

	// A failed reload is an event of no fleet: a webhook that lists
	// fleets is not sent it.
	est.write("fleets/broken.yaml", "name: [\n")
	ts.api("POST", "/api/v1/estate/reload", nil)

	// Every body is in the outbox, delivered.
	var got notify.DeliveriesJSON
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := ts.api("GET", "/api/v1/notifications/deliveries", nil)
		if code != 200 {
			t.Fatalf("deliveries: %d %s", code, body)
		}
		got = notify.DeliveriesJSON{}
		json.Unmarshal(body, &got)
		delivered := 0
		for _, d := range got.Deliveries {
			if d.State == notify.StateDelivered {
				delivered++
			}
		}
		if delivered == rc.count() && delivered == len(got.Deliveries) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	events := map[string]bool{}
	for _, d := range got.Deliveries {
		events[d.Event] = true
		if d.State != notify.StateDelivered || d.Webhook != "ops" || d.Attempts != 1 || d.DeliveredAt == nil || d.Bytes == 0 {
			t.Errorf("delivery %+v", d)
		}
	}
	for _, e := range []string{"offer_failed", "rollout_paused", "rollout_resumed", "self_update_rolled_back", "agent_offline"} {
		if !events[e] {
			t.Errorf("no %s delivery in %+v", e, got.Deliveries)
		}
	}
	if events["estate_reload_failed"] {
		t.Errorf("a webhook limited to fleets was sent an event of no fleet")
	}
	// What /metrics says of it.
	want := []string{
		`myriarch_ready 1`,
		`myriarch_notification_events_total{event="offer_failed"} 1`,
		`myriarch_notification_events_total{event="agent_offline"} 1`,
		`myriarch_notifications_delivered_total{webhook="ops"} ` + strconv.Itoa(len(got.Deliveries)),
		`myriarch_notifications_given_up_total{webhook="ops"} 0`,
		`myriarch_notifications_queued 0`,
		`myriarch_rollout_members{fleet="edge",rollout="offers",wave="(no wave)"} 2`,
		`myriarch_rollout_failed{fleet="edge",rollout="offers",wave="(no wave)"} 1`,
		`myriarch_rollout_done{fleet="edge",rollout="offers",wave="(no wave)"} 1`,
		`myriarch_rollout_paused{fleet="edge",rollout="offers"} 0`,
		`myriarch_rollout_failures{fleet="edge",rollout="offers"} 0`,
		`myriarch_agents_offline{fleet="edge"} 1`,
	}
	_, text := getNoToken(t, ts, "/metrics")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("metrics lack %q", w)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", grepLines(text, "myriarch_"))
	}
	if code, body := ts.api("GET", "/api/v1/notifications/deliveries?limit=0", nil); code != 400 || !strings.Contains(string(body), "query parameter limit: number must be at least 1") {
		t.Errorf("a bad limit: %d %s", code, body)
	}
}

// An estate event (no fleet) reaches a webhook that lists no fleets.
func TestWebhookEstateReloadFailed(t *testing.T) {
	secret := "0123456789abcdef-webhook"
	rc := &hookReceiver{secret: []byte(secret)}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	est := newEstate(t)
	est.mkdir("notifications")
	est.write("ops.secret", secret)
	est.write("notifications/ops.yaml", "url: "+hook.URL+"\nsecretFile: ops.secret\nevents: [estate_reload_failed]\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir; o.NotificationWindow = 100 * time.Millisecond })
	est.write("fleets/broken.yaml", "name: [\n")
	if code, _ := ts.api("POST", "/api/v1/estate/reload", nil); code == 200 {
		t.Fatal("a broken estate reloaded")
	}
	b := rc.wait(t, "estate_reload_failed")
	if b.Fleet != "" || b.Count != 1 || !strings.Contains(b.Items[0].Message, "fleets/broken.yaml") {
		t.Fatalf("estate_reload_failed: %+v", b)
	}
}
