package offers

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/rollout/rollouttest"
)

// Two connections of one collector (its old socket closing, its new one
// reporting) notify the engine at once. The engine must end with the
// registry's last word, not with a snapshot that lost the race: here the
// older report's notification is held right after it read the agent, while
// the newer report is handled completely.
func TestConcurrentReportsEndWithTheRegistrysLastWord(t *testing.T) {
	e, _, reg := buildPairs(t, 1)
	defer reg.Close()
	defer e.Close()
	e.SetEstate(testEstate("0.149.1"))
	e.mu.Lock()
	var col [16]byte
	for uid := range e.collectors {
		col = uid
	}
	e.mu.Unlock()
	cred := rollouttest.Cred
	report := func(seq uint64, version string) {
		reg.Report(col, cred, &protobufs.AgentToServer{SequenceNum: seq, Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig), AgentDescription: &protobufs.AgentDescription{
			IdentifyingAttributes:    []*protobufs.KeyValue{testkit.KV("service.name", "otelcol-contrib"), testkit.KV("service.version", version)},
			NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("host.name", "host-000000"), testkit.KV("os.type", "linux"), testkit.KV("host.arch", "amd64"), testkit.KV("site.type", "edge")},
		}}, false, false)
	}
	peeked, newerDone := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	testHookPeeked = func() {
		if !first.CompareAndSwap(false, true) {
			return
		}
		close(peeked)
		select { // with the agent read under the engine's lock the newer report waits for us
		case <-newerDone:
		case <-time.After(300 * time.Millisecond):
		}
	}
	defer func() { testHookPeeked = nil }()
	older := make(chan struct{})
	go func() { defer close(older); report(1, "0.149.0") }()
	<-peeked
	go func() { defer close(newerDone); report(2, "0.149.1") }()
	<-older
	<-newerDone
	a, _ := reg.Peek(col)
	e.mu.Lock()
	defer e.mu.Unlock()
	if got, want := e.collectors[col].version, a.Identifying.Value("service.version"); got != want {
		t.Fatalf("engine has the collector at %s, the registry at %s", got, want)
	}
	if st := e.collectors[col].state; st != UpToDate {
		t.Fatalf("state %s, want %s", st, UpToDate)
	}
}
