package audit

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// Options configure a Trail.
type Options struct {
	Store store.Audit
	Log   *slog.Logger
	// Now is the clock records are timed by (tests).
	Now func() time.Time
}

// Trail appends to, lists, verifies and cuts the audit trail of a store.
// Its methods are safe for concurrent use: the store orders appends, from
// this trail and from every other on the same database.
type Trail struct {
	store       store.Audit
	log         *slog.Logger
	now         func() time.Time
	cutChunk    int // CutChunk, less in tests
	verifyBatch int // verifyBatch, less in tests
}

// New returns the trail kept in opts.Store.
func New(opts Options) *Trail {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Trail{store: opts.Store, log: opts.Log, now: opts.Now, cutChunk: CutChunk, verifyBatch: verifyBatch}
}

// Append seals r after the trail's last record and stores it, returning
// it as stored: its id, time (now, when it is sealed), prev and hash set,
// its strings within their bounds. A record with an unknown outcome, via
// or role, without an action, or with the cuts' action is refused
// (ErrInvalid), naming each field that is wrong.
func (t *Trail) Append(ctx context.Context, r Record) (Record, error) {
	r, err := r.normalized()
	if err != nil {
		return Record{}, err
	}
	return t.append(ctx, r)
}

// append seals and stores r, which is normalized.
func (t *Trail) append(ctx context.Context, r Record) (Record, error) {
	s, err := t.store.AppendAudit(ctx, t.sealer(r))
	if err != nil {
		t.log.Error("audit record not written", "action", r.Action, "actor", r.Actor, "err", err)
		return Record{}, fmt.Errorf("audit trail: %w", err)
	}
	return fromStore(s[0]), nil
}

// sealer seals r after whatever head the store hands it.
func (t *Trail) sealer(r Record) store.AuditSeal {
	return func(head store.AuditHead) (store.AuditRecord, error) {
		r.ID, r.Prev, r.Time = head.ID+1, head.Hash, t.now().UTC()
		r.Hash = r.HashAfter(r.Prev)
		return r.stored(), nil
	}
}
