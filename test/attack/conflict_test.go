//go:build linux

package attack

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// TestIdentityConflictFlood: a token of site A presenting the instance UID
// of a site-B agent, reconnecting at once after each refusal (as
// opamp-go's client does), 2 000 times from 8 connections at once. Every
// refusal is counted, but the victim's history keeps its own events beside
// at most one identity_conflict event a minute, the log holds a few lines,
// and the victim agent keeps working.
func TestIdentityConflictFlood(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, siteA := d.token("site-a")
	_, siteB := d.token("site-b")
	uid := uuid.New()

	// The victim's own history: its registration, then reconnections that
	// replaced the connection before.
	const reconnections = 5
	victim := mustWS(t, d, siteB)
	victim.register(uid)
	for range reconnections {
		next := mustWS(t, d, siteB)
		next.register(uid)
		if code := victim.closeCode(10 * time.Second); code != 4000 {
			t.Fatalf("replaced connection closed with %d, want 4000", code)
		}
		victim = next
	}

	const flood, workers = 2000, 8
	start, logFrom := time.Now(), d.logSize()
	var answered, unadmitted atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range flood / workers {
				a, err := dialWS(t, d, siteA)
				if err != nil {
					// Past the server's admission rate (1 000 new
					// WebSockets a second) the upgrade is refused with 503.
					if strings.Contains(err.Error(), "HTTP 503") {
						unadmitted.Add(1)
					}
					continue
				}
				if a.send(hello(uid, 0)) == nil {
					if m, err := a.recv(10 * time.Second); err == nil && m.ErrorResponse != nil {
						answered.Add(1)
					}
					a.closeCode(10 * time.Second)
				}
				a.ws.Close()
			}
		})
	}
	wg.Wait()
	minutes := 1 + int(time.Since(start)/time.Minute)
	admitted := answered.Load()
	if admitted+unadmitted.Load() != flood || admitted < flood/2 {
		t.Errorf("%d of %d conflicting connections answered with an error, %d not admitted", admitted, flood, unadmitted.Load())
	}

	if n := d.metric("myriarch_opamp_rejects_total", `reason="identity_conflict`); n != float64(admitted) {
		t.Errorf("%0.f identity conflicts counted, want every one of the %d admitted", n, admitted)
	}
	a, _ := d.agent(uid.String())
	count := map[string]int{}
	for _, e := range a.Events {
		count[e.Type]++
	}
	if count["registered"] != 1 || count["connection_replaced"] != reconnections {
		t.Errorf("the victim's own history did not survive the flood:\n%s", fmtEvents(a))
	}
	if count["identity_conflict"] < 1 || count["identity_conflict"] > minutes {
		t.Errorf("%d identity_conflict events in %d minute(s), want one a minute at most (and at least one):\n%s",
			count["identity_conflict"], minutes, fmtEvents(a))
	}
	logged, err := os.ReadFile(d.logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, l := range strings.Split(string(logged[logFrom:]), "\n") {
		if strings.Contains(l, uid.String()) || strings.Contains(l, "refused") {
			lines++
		}
	}
	if lines > 2*minutes {
		t.Errorf("%d log lines about %d refusals from one source in %d minute(s), want at most %d", lines, flood, minutes, 2*minutes)
	}

	// The victim is still connected and answered.
	if err := victim.send(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: 1}); err != nil {
		t.Fatal(err)
	}
	if m, err := victim.recv(10 * time.Second); err != nil || m.ErrorResponse != nil {
		t.Fatalf("the victim after the flood: %v %v", m, err)
	}
}
