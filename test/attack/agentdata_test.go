//go:build linux

package attack

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// bigDescription is an AgentDescription of about size bytes in n attributes.
func bigDescription(uid uuid.UUID, n, size int) *protobufs.AgentDescription {
	d := hello(uid, 0).AgentDescription
	v := strings.Repeat("v", size/n)
	for i := range n {
		d.NonIdentifyingAttributes = append(d.NonIdentifyingAttributes, testkit.KV(fmt.Sprintf("attr.%05d", i), v))
	}
	return d
}

// TestStoredAgentData (finding 2): what an agent reports is bounded in
// memory, in the store and in the API, whatever it sends.
func TestStoredAgentData(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")

	heap0, rss0, disk0 := d.heapAfterGC(), d.rss(), dirSize(t, d.dataDir)
	var uids []uuid.UUID
	for range 30 { // 30 new agents over plain HTTP, 7.5 MiB of description each
		uid := uuid.New()
		uids = append(uids, uid)
		m := hello(uid, 0)
		m.AgentDescription = bigDescription(uid, 1900, 15<<19)
		if code, resp := pollHTTP(t, d, secret, m); code != 200 || resp.ErrorResponse != nil {
			t.Fatalf("registration: %d %v", code, resp.ErrorResponse)
		}
	}
	// One agent with 10 000 attributes.
	wide := uuid.New()
	m := hello(wide, 0)
	m.AgentDescription = bigDescription(wide, 10000, 7<<20)
	pollHTTP(t, d, secret, m)
	d.api("GET", "/api/v1/agents", nil) // what a listing costs comes back after GC
	testkit.WaitWithin(t, 10e9, "the agents written", func() bool { return dirSize(t, d.dataDir) > disk0 })
	d.stop() // everything flushed
	disk := dirSize(t, d.dataDir) - disk0
	d.start()
	heap := d.heapAfterGC() - heap0
	figure(t, "31 agents with 7–7.5 MiB descriptions (one of 10 000 attributes) over plain HTTP: live heap %+.1f MiB, "+
		"data dir %+.1f MiB, RSS %s → %s (descriptions kept: 64 KiB each)", float64(heap)/(1<<20), float64(disk)/(1<<20), mib(rss0), mib(d.rss()))
	if disk > 31*(64<<10)*3 {
		t.Errorf("the data dir grew by %s for 31 agents, bound 64 KiB of description each", mib(disk))
	}
	if heap > 31*(64<<10)*4 {
		t.Errorf("the live heap grew by %s for 31 agents, after a restart", mib(heap))
	}
	code, body := d.agentJSON(wide.String())
	if code != 200 || len(body) > 200<<10 {
		t.Errorf("GET of the 10 000-attribute agent: %d, %d bytes", code, len(body))
	}
	if a, _ := d.agent(wide.String()); !has(fmt.Sprint(a.Events), "attribute_limit") {
		t.Errorf("no attribute_limit event: %v", a.Events)
	}
}

// TestEventFlood (finding 2): label keys by the hundred in every message
// make one bounded warning each; the agent's history stays small.
func TestEventFlood(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	uid := uuid.New()
	m := hello(uid, 0)
	for i := range 256 {
		m.AgentDescription.NonIdentifyingAttributes = append(m.AgentDescription.NonIdentifyingAttributes,
			testkit.KV(fmt.Sprintf("labels.%03d.%s", i, strings.Repeat("k", 4000)), "forged"))
	}
	for i := range 75 {
		m.SequenceNum = uint64(i)
		pollHTTP(t, d, secret, m)
	}
	code, body := d.agentJSON(uid.String())
	a, _ := d.agent(uid.String())
	longest := 0
	for _, e := range a.Events {
		longest = max(longest, len(e.Message))
	}
	figure(t, "75 messages of 256 labels.* keys of 4 KiB: %d events, the longest %d bytes; GET /api/v1/agents/{uid} %d bytes", len(a.Events), longest, len(body))
	if code != 200 || len(body) > 300<<10 || longest > 1024 || longest < 512 {
		t.Errorf("agent JSON %d bytes, longest event %d bytes", len(body), longest)
	}
	for k := range a.Attributes {
		if strings.HasPrefix(k, "labels.") {
			t.Errorf("agent-reported %s kept in the view", k[:20])
		}
	}
}

// TestAttributeView (held): the view is bounded (256 per list, 4096 bytes
// per key or value) and cleaned (no NUL, valid UTF-8).
func TestAttributeView(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	uid := uuid.New()
	m := hello(uid, 0)
	m.AgentDescription.NonIdentifyingAttributes = append(m.AgentDescription.NonIdentifyingAttributes,
		testkit.KV("host.name", "a\x00bc"), testkit.KV("long", strings.Repeat("x", 5000)))
	for i := range 300 {
		m.AgentDescription.NonIdentifyingAttributes = append(m.AgentDescription.NonIdentifyingAttributes, testkit.KV(fmt.Sprintf("n%03d", i), "v"))
	}
	pollHTTP(t, d, secret, m)
	a, ok := d.agent(uid.String())
	if !ok {
		t.Fatal("not registered")
	}
	if v := a.Attributes["host.name"]; strings.ContainsRune(v, 0) || v != "abc" {
		t.Errorf("host.name kept as %q", v)
	}
	if n := len(a.Attributes["long"]); n > 4096 {
		t.Errorf("a 5000-byte value kept with %d bytes", n)
	}
	if len(a.Attributes) > 2*256 {
		t.Errorf("%d attributes in the view", len(a.Attributes))
	}
}

// TestRegistrationRate (finding 2): new agents per credential are
// bounded over plain HTTP too; past it agents are told when to retry.
func TestRegistrationRate(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "--registrations-per-minute", "10")
	_, secret := d.token("site")
	refused := 0
	for range 15 {
		code, resp := pollHTTP(t, d, secret, hello(uuid.New(), 0))
		if e := resp.GetErrorResponse(); code == 200 && e != nil {
			if e.Type != protobufs.ServerErrorResponseType_ServerErrorResponseType_Unavailable || e.GetRetryInfo() == nil {
				t.Fatalf("refusal %v, want Unavailable with a retry time", e)
			}
			refused++
		}
	}
	if refused != 5 {
		t.Errorf("%d of 15 new agents refused at 10 a minute, want 5", refused)
	}
}
