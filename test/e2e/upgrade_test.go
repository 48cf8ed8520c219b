package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"

	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

// Scenario 1: pairing of a real supervisor-run collector and a real updater.
func TestPairing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(peerbuild.VersionM1)
	col := e.waitCollector("linked collector", 90*time.Second, func(a site.Agent) bool {
		return a.Online && a.Kind == "collector" && a.Pairing.State == "linked"
	})
	for k, v := range siteAttrs {
		if col.Attributes[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, col.Attributes[k], v)
		}
	}
	if col.Attributes["labels.wave"] != "1" || col.Attributes["labels.region"] != "north" {
		t.Errorf("token labels missing from the view: %v", col.Attributes)
	}
	if col.Identifying["service.version"] != peerbuild.VersionM1 {
		t.Errorf("service.version = %q", col.Identifying["service.version"])
	}
	upd := e.updaterAgent(30 * time.Second)
	if upd.Kind != "updater" || upd.Pairing.State != "linked" || upd.Pairing.Collector == nil || *upd.Pairing.Collector != e.colUID {
		t.Fatalf("updater = %+v", upd.Pairing)
	}
	if col.Pairing.Updater == nil || *col.Pairing.Updater != upd.InstanceUID {
		t.Fatalf("collector pairing = %+v", col.Pairing)
	}
}

// Scenario 2 and 3: upgrade to m.2, then a broken release rolls back; the
// fleet configures its collectors, and the configuration survives the swaps.
func TestUpgradeThenBrokenReleaseRollsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.configure()
	e.install(peerbuild.VersionM1)
	before := e.waitCollector("linked and configured", 2*time.Minute, func(a site.Agent) bool {
		return a.Pairing.State == "linked" && a.Assignment.SyncState == "in_sync"
	})
	configured := site.Str(before.Assignment.Assigned)

	// Watch how long the collector is offline in the server's view during
	// the swap (supervisor stopped → new supervisor and collector connected).
	stopWatch := make(chan struct{})
	offline := make(chan time.Duration, 1)
	go func() {
		var longest time.Duration
		var since time.Time
		for {
			select {
			case <-stopWatch:
				offline <- longest
				return
			case <-time.After(20 * time.Millisecond):
			}
			a, ok, _ := e.srv.GetAgent(e.colUID)
			switch {
			case ok && !a.Online && since.IsZero():
				since = time.Now()
			case ok && a.Online && !since.IsZero():
				longest = max(longest, time.Since(since))
				since = time.Time{}
			}
		}
	}()
	start := time.Now()
	e.setTarget(peerbuild.VersionM2)
	col := e.waitCollector("m.2 up to date", 3*time.Minute, func(a site.Agent) bool {
		return a.Online && a.Identifying["service.version"] == peerbuild.VersionM2 && a.OfferState() == "up_to_date"
	})
	t.Logf("fleet change → collector reports %s: %v", peerbuild.VersionM2, time.Since(start))
	close(stopWatch)
	t.Logf("collector offline in the server's view during the swap: %v", <-offline)
	if col.InstanceUID != e.colUID {
		t.Fatalf("instance UID changed: %s → %s", e.colUID, col.InstanceUID)
	}
	// The Supervisor rewrites persistent_state.yaml in place when it
	// starts: a read in that moment finds it empty.
	var uid string
	testkit.WaitWithin(t, 10*time.Second, "persistent_state.yaml with an instance_id", func() bool {
		uid, _ = e.site.CollectorUID()
		return uid != ""
	})
	if uid != e.colUID {
		t.Fatalf("persistent_state instance_id changed: %s → %s", e.colUID, uid)
	}
	// The Supervisor re-applied its cached remote configuration on m.2.
	col = e.waitCollector("configuration in sync on m.2", time.Minute, func(a site.Agent) bool {
		return a.Assignment.SyncState == "in_sync" && site.Str(a.Assignment.Reported.Hash) == configured
	})
	e.waitLogFlows("a record through m.2", time.Minute)

	// Scenario 3: the broken release.
	e.setTarget(peerbuild.VersionBroken)
	col = e.waitCollector("broken release failed", 4*time.Minute, func(a site.Agent) bool { return a.OfferState() == "failed" })
	if col.Offer.Error == nil || *col.Offer.Error == "" {
		t.Fatal("failed offer has no reason")
	}
	t.Logf("broken release refused: %s", *col.Offer.Error)
	col = e.waitCollector("back on m.2", 2*time.Minute, func(a site.Agent) bool {
		return a.Online && a.Identifying["service.version"] == peerbuild.VersionM2
	})
	cur, _ := e.site.CurrentVersion()
	if !strings.HasPrefix(cur, peerbuild.VersionM2) && cur != peerbuild.VersionM2 {
		t.Fatalf("current → %s after rollback", cur)
	}
	// Not re-offered until retry: the updater's failure report and the
	// collector's reconnection on m.2 (both re-evaluate the offer) are
	// behind; the history up to the retry shows no offer after the failure.
	var out map[string]any
	if code, err := e.srv.API("POST", "/api/v1/agents/"+e.colUID+"/retry", nil, &out); err != nil || code != 200 {
		t.Fatalf("retry: %d %v", code, err)
	}
	col = e.waitCollector("re-offered after retry", 30*time.Second, func(a site.Agent) bool {
		s := a.OfferState()
		return s == "offered" || s == "downloading" || s == "installing" || s == "installed" || s == "failed"
	})
	if moves := offerMovesBetween(t, col, "offer_failed", "offer_retry"); len(moves) > 0 {
		t.Fatalf("re-offered before the retry: %v", moves)
	}
}
