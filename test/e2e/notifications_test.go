package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// A myriarchd killed (SIGKILL) after its webhook received a body and
// before it recorded the answer sends the same delivery again after its
// restart, once the lost attempt's claim runs out, under the same
// delivery id, so a receiver that remembers ids
// keeps one; the outbox then shows it delivered.
func TestNotificationSurvivesKillBetweenSendAndRecord(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	est := filepath.Join(root, "estate")
	for _, d := range []string{"fleets", "notifications"} {
		if err := os.MkdirAll(filepath.Join(est, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := "0123456789abcdef-e2e-webhook"
	var (
		srv  *site.Server
		mu   sync.Mutex
		seen []string // delivery ids, in the order received; guarded by mu
		bad  []string // guarded by mu
	)
	killed := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		io.WriteString(mac, r.Header.Get("X-Myriarch-Timestamp")+".")
		mac.Write(raw)
		var body struct {
			ID, Event string
			Count     int
		}
		err := json.Unmarshal(raw, &body)
		mu.Lock()
		if err != nil || r.Header.Get("X-Myriarch-Signature") != "sha256="+hex.EncodeToString(mac.Sum(nil)) || body.Event != "estate_reload_failed" {
			bad = append(bad, string(raw))
		}
		seen = append(seen, r.Header.Get("X-Myriarch-Delivery"))
		first := len(seen) == 1
		mu.Unlock()
		if first {
			// Received, not answered: myriarchd dies before it can record it.
			// The answer waits for the process to be gone: a 200 read
			// before the kill lands would be recorded.
			exited := srv.Exited()
			if err := srv.Signal(syscall.SIGKILL); err != nil {
				t.Errorf("kill: %v", err)
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Errorf("myriarchd still runs 10 s after SIGKILL")
			}
			close(killed)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	write := func(rel, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(est, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ops.secret", secret)
	write("notifications/ops.yaml", "url: "+hook.URL+"/hook\nsecretFile: ops.secret\nevents: [estate_reload_failed]\n")

	srv = &site.Server{Bin: bins.Myriarchd, DataDir: filepath.Join(root, "data"), Estate: est, LogPath: filepath.Join(root, "myriarchd.log"),
		Env: []string{"MYRIARCH_NOTIFICATION_WINDOW=200ms"}}
	var err error
	if srv.OpAMPAddr, err = site.FreeAddr(); err != nil {
		t.Fatal(err)
	}
	if srv.AdminAddr, err = site.FreeAddr(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Stop()
		if t.Failed() {
			dumpLogs(t, root)
		}
	})

	write("fleets/broken.yaml", "name: [\n")
	if err := srv.Reload(); err == nil {
		t.Fatal("a broken estate reloaded")
	}
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook body within 30 s")
	}
	srv.Stop() // reaps the killed process
	if err := os.Remove(filepath.Join(est, "fleets/broken.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if !testkit.Poll(60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= 2
	}) {
		// What the restarted server's outbox says of the delivery.
		var raw any
		code, err := srv.API("GET", "/api/v1/notifications/deliveries", nil, &raw)
		b, _ := json.MarshalIndent(raw, "", "  ")
		t.Fatalf("the body was not sent again within 60 s of the restart; the outbox (%d %v):\n%s", code, err, b)
	}
	var out struct {
		Deliveries []struct {
			ID, Event, State string
			Attempts         int
		}
	}
	testkit.WaitWithin(t, 30*time.Second, "the delivery recorded", func() bool {
		code, err := srv.API("GET", "/api/v1/notifications/deliveries", nil, &out)
		return err == nil && code == 200 && len(out.Deliveries) == 1 && out.Deliveries[0].State == "delivered"
	})
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("bodies failed the receiver's checks: %v", bad)
	}
	d := out.Deliveries[0]
	// Two attempts: the one the kill cut off (claimed, never recorded) and
	// the one after its claim ran out.
	if len(seen) != 2 || seen[0] != seen[1] || seen[0] != d.ID || d.Attempts != 2 || d.Event != "estate_reload_failed" {
		t.Fatalf("received %v; the outbox says %+v", seen, d)
	}
}
