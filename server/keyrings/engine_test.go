package keyrings

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/keyring"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

type noTokens struct{}

func (noTokens) TokenName(string) string              { return "" }
func (noTokens) TokenLabels(string) map[string]string { return nil }

// pushes records what the engine pushes.
type pushes struct {
	mu  sync.Mutex
	got []uuid.UUID
}

func (p *pushes) Send(uid uuid.UUID, msg *protobufs.ServerToAgent) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg.GetCustomMessage().GetCapability() == keyring.Capability {
		p.got = append(p.got, uid)
	}
	return true
}

func (p *pushes) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

func estateWith(t *testing.T, root keyringtest.Key, serial uint64) *estate.Estate {
	s := keyringtest.Sign(root, keyringtest.Doc{Serial: serial}.JSON(t))
	d, err := keyring.Parse(s.Keyring)
	if err != nil {
		t.Fatal(err)
	}
	return &estate.Estate{Keyring: &estate.Keyring{Doc: d, Signed: s}}
}

func described(attrs ...string) *protobufs.AgentToServer {
	var kvs []*protobufs.KeyValue
	for i := 0; i < len(attrs); i += 2 {
		kvs = append(kvs, testkit.KV(attrs[i], attrs[i+1]))
	}
	return &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{NonIdentifyingAttributes: kvs}}
}

// What an updater is sent, and when: once while it lacks the estate's
// keyring, again after ResendAfter, never once it refused that keyring
// or has it; collectors and updaters without a root key never.
func TestWhoIsSentTheKeyring(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg, err := registry.Load(ctx, db, noTokens{}, slog.New(slog.DiscardHandler), registry.Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	p := &pushes{}
	e := New(reg, p, Options{Now: func() time.Time { return now }})
	t.Cleanup(e.Close)
	root := keyringtest.NewKey(t)
	e.SetEstate(estateWith(t, root, 3))

	answer := func(uid uuid.UUID, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
		resp := &protobufs.ServerToAgent{}
		e.OnAgentMessage(uid, msg, resp)
		return resp
	}
	updater, collector, refuser := uuid.New(), uuid.New(), uuid.New()
	if resp := answer(collector, described("host.name", "h")); resp.CustomMessage != nil {
		t.Fatal("a collector was sent the keyring")
	}
	resp := answer(updater, described(keyring.AttrSerial, "1"))
	if resp.GetCustomMessage().GetType() != keyring.MessageType {
		t.Fatalf("an updater behind was not sent the keyring: %v", resp)
	}
	got, err := keyring.Decode(resp.CustomMessage.Data)
	if err != nil || got.Signature == "" {
		t.Fatalf("the message: %v", err)
	}
	if resp := answer(updater, &protobufs.AgentToServer{}); resp.CustomMessage != nil {
		t.Fatal("sent again at once")
	}
	if st := e.StateCounts(); st[StateOffered] != 1 || st[StateBehind] != 0 {
		t.Fatalf("states %v", st)
	}
	now = now.Add(31 * time.Second)
	if resp := answer(updater, &protobufs.AgentToServer{}); resp.CustomMessage == nil {
		t.Fatal("not sent again after ResendAfter")
	}
	if resp := answer(updater, described(keyring.AttrSerial, "3")); resp.CustomMessage != nil {
		t.Fatal("sent to an updater that has it")
	}

	id := keyring.ID(estateWith(t, root, 3).Keyring.Signed.Keyring) // the same document, so the same ID
	answer(refuser, described(keyring.AttrSerial, "0"))
	now = now.Add(time.Minute)
	if resp := answer(refuser, described(keyring.AttrSerial, "0", keyring.AttrRefused, id+": keyring not signed by a pinned root key")); resp.CustomMessage != nil {
		t.Fatal("a refused keyring sent again")
	}
	if st := e.StateCounts(); st[StateCurrent] != 1 || st[StateRefused] != 1 || st[StateOffered] != 0 {
		t.Fatalf("states %v", st)
	}

	// A new keyring in the estate is pushed to the updaters that lack it,
	// the one that refused the previous one included.
	e.SetEstate(estateWith(t, root, 4))
	testkit.WaitFor(t, "two pushes", func() bool { return p.count() == 2 })
	if st := e.StateCounts(); st[StateOffered] != 2 {
		t.Fatalf("states %v", st)
	}
}
