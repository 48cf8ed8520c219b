package audit

import (
	"context"
	"log/slog"
	"sync"
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

	mu      sync.Mutex
	queue   []*queued // guarded by mu: appends waiting for a batch
	writing bool      // guarded by mu: an append is writing a batch
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
// its strings within their bounds. Appends at the same time share a
// transaction (see appendQueued). A record with an unknown outcome, via
// or role, without an action, or with the cuts' action is refused
// (ErrInvalid), naming each field that is wrong.
func (t *Trail) Append(ctx context.Context, r Record) (Record, error) {
	r, err := r.normalized()
	if err != nil {
		return Record{}, err
	}
	return t.appendQueued(ctx, r)
}

// sealer seals r after whatever head the store hands it.
func (t *Trail) sealer(r Record) store.AuditSeal {
	return func(head store.AuditHead) (store.AuditRecord, error) {
		r.ID, r.Prev, r.Time = head.ID+1, head.Hash, t.now().UTC()
		r.Hash = r.HashAfter(r.Prev)
		return r.stored(), nil
	}
}
