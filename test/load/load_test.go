//go:build linux

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/server/estate"
)

func TestUIDsDistinctAndValid(t *testing.T) {
	seen := map[uuid.UUID]bool{}
	for _, run := range []uint64{1, 1 << 40} {
		for i := 0; i < 200000; i += 997 {
			u := uidFor(run, i)
			if seen[u] {
				t.Fatalf("uid %s repeated (run %d, i %d)", u, run, i)
			}
			seen[u] = true
			if u.Version() != 4 || u.Variant() != uuid.RFC4122 {
				t.Fatalf("uid %s is not a well-formed v4 UUID", u)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	good := config{instances: 1, workers: 1, agents: 10, heartbeat: time.Second, logLevel: "warn", dialConcurrency: 1, sourceAddrs: 1, churnPerMin: 0.01, reconnectFraction: 0.5, scenarios: "ramp,steady", transport: "ws"}
	tests := []struct {
		name string
		mod  func(*config)
		want []string // substrings of the error; none: valid
	}{
		{name: "valid", mod: func(*config) {}},
		{name: "odd agents", mod: func(c *config) { c.agents = 3 }, want: []string{"-n 3"}},
		{name: "log level", mod: func(c *config) { c.logLevel = "loud" }, want: []string{`-log-level "loud"`}},
		{name: "every error at once", mod: func(c *config) {
			c.agents, c.heartbeat, c.transport, c.scenarios, c.churnPerMin, c.reconnectFraction = 0, 0, "udp", "ramp,boom", 2, 0
		}, want: []string{"-n 0", "-heartbeat", `-transport "udp"`, `unknown phase "boom"`, "-churn-rate 2", "-reconnect-fraction 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.mod(&c)
			err := c.validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestBackoffBounded(t *testing.T) {
	s := &sim{cfg: config{backoffBase: time.Second, backoffCap: 30 * time.Second}}
	for attempt := 0; attempt < 70; attempt++ {
		for i := 0; i < 50; i++ {
			d := s.backoff(attempt)
			ceil := min(time.Second<<min(attempt, 10), 30*time.Second)
			if d <= 0 || d > ceil+time.Millisecond {
				t.Fatalf("attempt %d: backoff %s outside (0, %s]", attempt, d, ceil)
			}
		}
	}
}

func TestDecodeFrame(t *testing.T) {
	want := &protobufs.ServerToAgent{InstanceUid: []byte("0123456789abcdef"), Flags: 1}
	body, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got protobufs.ServerToAgent
	if err := decodeFrame(append([]byte{0}, body...), &got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, want) {
		t.Fatalf("decoded %v, want %v", &got, want)
	}
	if err := decodeFrame([]byte{0, 0xff, 0xff}, &got); err == nil {
		t.Fatal("garbage decoded without an error")
	}
}

// TestEstateLoads: the generated estate is one myriarchd accepts, before
// and after the rollout's change of targetVersion.
func TestEstateLoads(t *testing.T) {
	dir := t.TempDir()
	if err := writeEstate(dir, []string{"0.149.0", "0.149.1"}, "0.149.0"); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"0.149.0", "0.149.1"} {
		if err := setTarget(dir, target); err != nil {
			t.Fatal(err)
		}
		e, err := estate.Load(dir)
		if err != nil {
			t.Fatalf("target %s: %v", target, err)
		}
		if len(e.Fleets) != 1 || e.Fleets[0].TargetVersion != target {
			t.Fatalf("target %s: fleets %+v", target, e.Fleets)
		}
	}
}

// TestDescriptions: collectors and updaters describe themselves so that
// myriarchd classifies and pairs them.
func TestDescriptions(t *testing.T) {
	s := &sim{}
	c := &agent{s: s, uid: uidFor(1, 0), host: "h", version: "0.149.0", site: "s", region: "r"}
	u := &agent{s: s, uid: uidFor(1, 1), host: "h", updater: true, peer: c}
	c.peer = u
	attrs := func(kvs []*protobufs.KeyValue) map[string]string {
		m := map[string]string{}
		for _, kv := range kvs {
			m[kv.Key] = kv.Value.GetStringValue()
		}
		return m
	}
	cd, ud := c.fullState(), u.fullState()
	if got := attrs(cd.AgentDescription.IdentifyingAttributes)["service.version"]; got != "0.149.0" {
		t.Errorf("collector service.version %q", got)
	}
	if got := attrs(ud.AgentDescription.IdentifyingAttributes)["service.name"]; got != "myriarch-updater" {
		t.Errorf("updater service.name %q", got)
	}
	if got := attrs(ud.AgentDescription.NonIdentifyingAttributes)["dev.myriarch.collector.instance_uid"]; got != c.uid.String() {
		t.Errorf("updater claims %q, want %s", got, c.uid)
	}
	if cd.Capabilities&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig) == 0 ||
		ud.Capabilities&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages) == 0 {
		t.Errorf("capabilities: collector %b, updater %b", cd.Capabilities, ud.Capabilities)
	}
}

// Agents are spread over the instances, and an agent whose attempts fail
// tries the next instance each time, so every instance is tried.
func TestURLForSpreadsAndFailsOver(t *testing.T) {
	s := &sim{urls: []string{"a", "b", "c"}}
	spread := map[string]int{}
	for idx := range 300 {
		spread[s.urls[s.instanceFor(idx, 0)]]++
	}
	if spread["a"] != 100 || spread["b"] != 100 || spread["c"] != 100 {
		t.Fatalf("300 agents spread as %v", spread)
	}
	tried := map[string]bool{}
	for failed := range 3 {
		tried[s.urls[s.instanceFor(7, failed)]] = true
	}
	if len(tried) != 3 {
		t.Fatalf("three failed attempts tried %v", tried)
	}
}

// The CPU of PostgreSQL is its postmaster's and its backends': one that
// ends (its instance's connections closed) must not take what it used
// away from the total.
func TestPostgresCPUKeepsEndedBackends(t *testing.T) {
	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// The child, this test's "backend", burns CPU until it is killed.
	var alive procSample
	deadline := time.Now().Add(time.Minute)
	for {
		s, _ := samplePostgres(os.Getpid())
		if own, _ := samplePostgres(child.Process.Pid); own.cpu >= 200*time.Millisecond {
			alive = s
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatal("the child used no CPU within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	child.Process.Kill()
	child.Wait() // reaped: its time is now this process's children's
	ended, _ := samplePostgres(os.Getpid())
	if ended.cpu < alive.cpu {
		t.Fatalf("CPU fell from %v to %v when the child ended", alive.cpu, ended.cpu)
	}
}
