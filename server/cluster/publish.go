package cluster

import (
	"context"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

// Publishing wraps the store of an instance so that what it writes (agent
// rows and their events, reports, tokens, the leader's decisions and
// state) is announced to the other instances. Heartbeat-only writes (last
// seen) are not announced: the others read them in their lease sweep.
//
// Each instance writes the rows and events of the agents connected to it
// (or to none): what it has of an agent connected to another instance (a
// merged agent evaluated again) is not written over that instance's
// record, and events it records about such an agent are relayed to that
// instance instead (store.Batch.Relayed), which adds them to the agent's
// history. SetElsewhere says which agents those are.
func Publishing(st store.Store, n *Notifier) *Publisher {
	return &Publisher{Store: st, n: n}
}

// Publisher is the store that Publishing returns.
type Publisher struct {
	store.Store
	n         *Notifier
	elsewhere atomic.Pointer[func(uid [16]byte) bool]
}

// SetElsewhere sets the test of an agent connected to another instance
// (call before traffic; until then every record is written).
func (p *Publisher) SetElsewhere(fn func(uid [16]byte) bool) { p.elsewhere.Store(&fn) }

func (p *Publisher) isElsewhere(uid [16]byte) bool {
	fn := p.elsewhere.Load()
	return fn != nil && (*fn)(uid)
}

func (p *Publisher) Write(ctx context.Context, b store.Batch) error {
	if p.elsewhere.Load() != nil {
		b = p.ownBatch(b)
	}
	if err := p.Store.Write(ctx, b); err != nil {
		return err
	}
	// Histories are read from the store: new events alone change nothing
	// the others hold.
	ids := make([]string, 0, len(b.Agents)+len(b.Connected)+len(b.Disconnected))
	for _, a := range b.Agents {
		if !a.EventsOnly {
			ids = append(ids, hex.EncodeToString(a.UID[:]))
		}
	}
	for uid := range b.Connected {
		ids = append(ids, hex.EncodeToString(uid[:]))
	}
	for _, uid := range b.Disconnected {
		ids = append(ids, hex.EncodeToString(uid[:]))
	}
	// Rows deleted (agents pruned or forgotten): the others read that
	// they are gone.
	for _, uid := range b.Delete {
		ids = append(ids, hex.EncodeToString(uid[:]))
	}
	if len(ids) > 0 {
		p.n.Publish(KindAgents, ids...)
	}
	if len(b.Reports) > 0 {
		ids = ids[:0]
		for _, r := range b.Reports {
			ids = append(ids, hex.EncodeToString(r.UID[:]))
		}
		p.n.Publish(KindReports, ids...)
	}
	if len(b.Relayed) > 0 {
		ids = ids[:0]
		for uid := range b.Relayed {
			ids = append(ids, hex.EncodeToString(uid[:]))
		}
		p.n.Publish(KindRelay, ids...)
	}
	return nil
}

// ownBatch is b without the rows of agents connected elsewhere, and with
// their events relayed.
func (p *Publisher) ownBatch(b store.Batch) store.Batch {
	out := store.Batch{LastSeen: b.LastSeen, KeepEvent: b.KeepEvent, Reports: b.Reports,
		Events: make(map[[16]byte][]store.Event, len(b.Events)), Relayed: b.Relayed,
		Instance: b.Instance, Connected: b.Connected, Disconnected: b.Disconnected, Delete: b.Delete}
	for _, a := range b.Agents {
		if !p.isElsewhere(a.UID) {
			out.Agents = append(out.Agents, a)
		}
	}
	for uid, evs := range b.Events {
		if !p.isElsewhere(uid) {
			out.Events[uid] = evs
			continue
		}
		if out.Relayed == nil {
			out.Relayed = map[[16]byte][]store.Event{}
		}
		out.Relayed[uid] = append(out.Relayed[uid], evs...)
	}
	return out
}

func (p *Publisher) InsertToken(ctx context.Context, t tokens.Token) error {
	if err := p.Store.InsertToken(ctx, t); err != nil {
		return err
	}
	p.n.Publish(KindTokens)
	return nil
}

func (p *Publisher) RevokeToken(ctx context.Context, id string, at time.Time) error {
	if err := p.Store.RevokeToken(ctx, id, at); err != nil {
		return err
	}
	p.n.Publish(KindTokens)
	return nil
}

func (p *Publisher) WriteConfigs(ctx context.Context, b store.ConfigBatch) error {
	if err := p.Store.WriteConfigs(ctx, b); err != nil {
		return err
	}
	p.publishUIDs(KindConfigs, b.Assignments)
	return nil
}

func (p *Publisher) WriteOffers(ctx context.Context, records map[[16]byte][]byte) error {
	if err := p.Store.WriteOffers(ctx, records); err != nil {
		return err
	}
	p.publishUIDs(KindOffers, records)
	return nil
}

func (p *Publisher) publishUIDs(kind string, m map[[16]byte][]byte) {
	if len(m) == 0 {
		return
	}
	ids := make([]string, 0, len(m))
	for uid := range m {
		ids = append(ids, hex.EncodeToString(uid[:]))
	}
	p.n.Publish(kind, ids...)
}

func (p *Publisher) PutState(ctx context.Context, key string, value []byte) error {
	if err := p.Store.PutState(ctx, key, value); err != nil {
		return err
	}
	p.n.Publish(KindState)
	return nil
}

func (p *Publisher) DeleteState(ctx context.Context, key string) error {
	if err := p.Store.DeleteState(ctx, key); err != nil {
		return err
	}
	p.n.Publish(KindState)
	return nil
}
