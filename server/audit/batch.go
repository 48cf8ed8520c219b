package audit

import (
	"context"
	"fmt"

	"github.com/myriarch/myriarch/server/store"
)

// maxBatch is the most records one transaction appends.
const maxBatch = 32

// queued is an append waiting for its transaction.
type queued struct {
	r    Record
	out  Record
	err  error
	done chan struct{} // closed once written, or failed
	lead chan struct{} // closed when this append is to write the next batch
}

// appendQueued writes r with the appends queued at the same time: the
// first append to find no batch being written writes a batch of the
// queue, itself first, in one transaction; then the oldest append left
// in the queue writes the next. So appends are written in the order they
// came, each waits for at most the batch being written and its own, and a
// flood of appends costs a transaction per batch, not per record.
//
// The batch is written even if ctx ends meanwhile: a request whose client
// left still happened.
func (t *Trail) appendQueued(ctx context.Context, r Record) (Record, error) {
	q := &queued{r: r, done: make(chan struct{}), lead: make(chan struct{})}
	t.mu.Lock()
	t.queue = append(t.queue, q)
	lead := !t.writing
	t.writing = true
	t.mu.Unlock()
	if !lead {
		select {
		case <-q.done:
			return q.out, q.err
		case <-q.lead:
		}
	}
	t.writeBatch(context.WithoutCancel(ctx))
	return q.out, q.err
}

// writeBatch writes the head of the queue and hands the writing on.
func (t *Trail) writeBatch(ctx context.Context) {
	t.mu.Lock()
	n := min(len(t.queue), maxBatch)
	batch := t.queue[:n:n]
	t.queue = t.queue[n:]
	t.mu.Unlock()

	seals := make([]store.AuditSeal, len(batch))
	for i, q := range batch {
		seals[i] = t.sealer(q.r)
	}
	recs, err := t.store.AppendAudit(ctx, seals...)
	if err == nil && len(recs) != len(batch) {
		err = fmt.Errorf("the store appended %d records of %d", len(recs), len(batch))
	}
	if err != nil {
		t.log.Error("audit records not written", "records", len(batch), "err", err)
		err = fmt.Errorf("audit trail: %w", err)
	}
	for i, q := range batch {
		if err != nil {
			q.err = err
		} else {
			q.out = fromStore(recs[i])
		}
		close(q.done)
	}

	t.mu.Lock()
	if len(t.queue) > 0 {
		close(t.queue[0].lead)
	} else {
		t.writing = false
	}
	t.mu.Unlock()
}
