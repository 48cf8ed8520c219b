package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

func syncState(want string) func(site.Agent) bool {
	return func(a site.Agent) bool { return a.Assignment.SyncState == want }
}

// A fleet's Blueprint reaches the collector through the real Supervisor
// and data flows to the exporter named after the site; a revision the
// collector rejects fails, the previous configuration is sent back and
// data keeps flowing; a Supervisor restarted with the rejected
// configuration cached is brought back by the server; retry offers the
// failed configuration again.
func TestConfigurationFromTheEstate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.configure()
	e.install(peerbuild.VersionM1)

	seen := map[string]bool{}
	col := e.waitCollector("config in sync", 2*time.Minute, func(a site.Agent) bool {
		seen[a.Assignment.SyncState] = true
		return a.Online && a.Assignment.SyncState == "in_sync"
	})
	if !seen["pending"] {
		t.Errorf("sync states seen before in_sync: %v (want pending among them)", seen)
	}
	good := site.Str(col.Assignment.Assigned)
	if good == "" || site.Str(col.Assignment.Reported.Hash) != good || col.Assignment.Reported.Status != "applied" ||
		site.Str(col.Assignment.Blueprint) != "data-flow/gateway" {
		t.Fatalf("assignment %+v", col.Assignment)
	}
	e.waitLogFlows("first record through the remote config", time.Minute)

	// A revision with an exporter type the collector does not have.
	e.writeBlueprint("nosuch")
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	// Rolled back to the last applied configuration: drift,
	// the failure kept in the failed hash.
	col = e.waitCollector("new revision failed and rolled back", 2*time.Minute, func(a site.Agent) bool {
		return a.Assignment.SyncState == "drift" && site.Str(a.Assignment.Failed) != "" &&
			site.Str(a.Assignment.Reported.Hash) == good && a.Assignment.Reported.Status == "applied"
	})
	bad := site.Str(col.Assignment.Assigned)
	if bad == good || site.Str(col.Assignment.Failed) != bad || site.Str(col.Assignment.Desired) != good {
		t.Fatalf("after the failure: %+v", col.Assignment)
	}
	for _, ev := range []string{"config_failed", "config_rolled_back", "config_sent", "config_applied"} {
		if !col.HasEvent(ev) {
			t.Errorf("no %s event", ev)
		}
	}
	e.waitLogFlows("second record after the rollback", time.Minute)

	// Retry offers the failed configuration again; while the Supervisor
	// holds it, freeze the server so the rollback cannot reach it, stop
	// the Supervisor with the rejected configuration cached, and start it
	// again: it crash-loops on it until the server sends the good one.
	cached := filepath.Join(e.site.StorageDir, "last_recv_remote_config.dat")
	restartedWithBad := false
	for attempt := 1; attempt <= 3 && !restartedWithBad; attempt++ {
		if code, err := e.srv.API("POST", "/api/v1/agents/"+e.colUID+"/config/retry", nil, nil); err != nil || code != 200 {
			t.Fatalf("retry: %d %v", code, err)
		}
		waitFile(t, cached, []byte("nosuch/"), 30*time.Second, time.Millisecond)
		if err := e.srv.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		e.updater.Stop(30 * time.Second)
		data, _ := os.ReadFile(cached)
		restartedWithBad = bytes.Contains(data, []byte("nosuch/"))
		if err := e.srv.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if !restartedWithBad {
			t.Logf("attempt %d: the rollback reached the Supervisor before it stopped; again", attempt)
		}
		e.startUpdater(nil)
		// The failed hash was cleared by the retry: it shows again once
		// the server has judged the restarted collector.
		col = e.waitCollector("failed again and back on the good configuration", 3*time.Minute, func(a site.Agent) bool {
			return a.Online && site.Str(a.Assignment.Failed) == bad &&
				site.Str(a.Assignment.Reported.Hash) == good && a.Assignment.Reported.Status == "applied"
		})
	}
	if !restartedWithBad {
		t.Fatal("could not stop the Supervisor with the rejected configuration cached")
	}
	if col.Assignment.SyncState != "drift" || site.Str(col.Assignment.Failed) != bad {
		t.Fatalf("after the restart: %+v", col.Assignment)
	}
	failures := 0
	for _, ev := range col.Events {
		if ev.Type == "config_failed" {
			failures++
		}
	}
	if failures < 2 {
		t.Fatalf("%d config_failed events: the retry did not offer the configuration again", failures)
	}
	e.waitLogFlows("third record after the Supervisor restart", time.Minute)

	// The fix: a new revision the collector accepts.
	e.writeBlueprint("otlphttp")
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	e.waitCollector("in sync again", 2*time.Minute, syncState("in_sync"))
}

// waitFile polls path until it contains want.
func waitFile(t *testing.T, path string, want []byte, timeout, every time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && bytes.Contains(data, want) {
			return
		}
		time.Sleep(every)
	}
	t.Fatal(fmt.Sprintf("%s did not come to contain %q within %v", path, want, timeout))
}
