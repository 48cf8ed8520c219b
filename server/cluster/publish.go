package cluster

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

// Publishing wraps the store of an instance so that what it writes (agent
// rows and their events, tokens) is announced to the other instances.
// Heartbeat-only writes (last seen) are not announced: the others read
// them in their lease sweep.
func Publishing(st store.Store, n *Notifier) store.Store {
	return &publishing{Store: st, n: n}
}

type publishing struct {
	store.Store
	n *Notifier
}

func (p *publishing) Write(ctx context.Context, b store.Batch) error {
	if err := p.Store.Write(ctx, b); err != nil {
		return err
	}
	ids := make([]string, 0, len(b.Agents)+len(b.Events))
	for _, a := range b.Agents {
		ids = append(ids, hex.EncodeToString(a.UID[:]))
	}
	for uid := range b.Events {
		ids = append(ids, hex.EncodeToString(uid[:]))
	}
	if len(ids) > 0 {
		p.n.Publish(KindAgents, ids...)
	}
	return nil
}

func (p *publishing) InsertToken(ctx context.Context, t tokens.Token) error {
	if err := p.Store.InsertToken(ctx, t); err != nil {
		return err
	}
	p.n.Publish(KindTokens)
	return nil
}

func (p *publishing) RevokeToken(ctx context.Context, id string, at time.Time) error {
	if err := p.Store.RevokeToken(ctx, id, at); err != nil {
		return err
	}
	p.n.Publish(KindTokens)
	return nil
}
