package registry

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/store"
)

func (r *Registry) loop() {
	defer close(r.done)
	fast := time.NewTicker(r.opts.FlushInterval)
	slow := time.NewTicker(r.opts.SeenInterval)
	prune := time.NewTicker(r.opts.PruneInterval)
	defer fast.Stop()
	defer slow.Stop()
	defer prune.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-fast.C:
			r.flush(false)
			r.sweepConflicts()
		case <-slow.C:
			r.flush(true)
		case <-prune.C:
			r.prune()
		}
	}
}

// Flush writes every pending change now, heartbeats included.
func (r *Registry) Flush() error { return r.flush(true) }

func (r *Registry) flush(withSeen bool) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	if len(r.pendingRows) == 0 && len(r.pendingEvents) == 0 && len(r.pendingReports) == 0 && len(r.pendingConns) == 0 &&
		len(r.pendingDeletes) == 0 && (!withSeen || len(r.pendingSeen) == 0) {
		r.mu.Unlock()
		return nil
	}
	b := store.Batch{KeepEvent: MaxEvents, Events: map[[16]byte][]store.Event{}}
	for _, uid := range r.pendingDeletes {
		b.Delete = append(b.Delete, uid)
	}
	r.pendingDeletes = nil
	for uid, changed := range r.pendingRows {
		if a, ok := r.agents[uid]; ok {
			rec := a.record()
			rec.Changed = changed.Time()
			b.Agents = append(b.Agents, rec)
			a.seenWritten, a.descSum = a.lastSeen, descSumOf(rec.Description)
		}
		delete(r.pendingSeen, uid)
	}
	for uid, evs := range r.pendingEvents {
		b.Events[uid] = evs
		if _, ok := r.pendingRows[uid]; !ok {
			// An event for an agent whose row is not written yet would be
			// orphaned on a crash; write the row too. An agent whose row
			// is written needs none: building it (its description encoded
			// again) was most of what a rollout's events cost to write.
			if a, ok := r.agents[uid]; ok && !a.persisted {
				rec := a.record()
				rec.EventsOnly = true
				b.Agents = append(b.Agents, rec)
			}
		}
	}
	if withSeen && len(r.pendingSeen) > 0 {
		b.LastSeen = make(map[[16]byte]time.Time, len(r.pendingSeen))
		for uid := range r.pendingSeen {
			a, ok := r.agents[uid]
			if !ok {
				delete(r.pendingSeen, uid)
				continue
			}
			if a.conns > 0 && time.Duration(a.lastSeen-a.seenWritten) < r.opts.ConnectedSeenInterval {
				continue // kept for a later flush
			}
			b.LastSeen[uid], a.seenWritten = a.lastSeen.Time(), a.lastSeen
			delete(r.pendingSeen, uid)
		}
	}
	for _, rep := range r.pendingReports {
		b.Reports = append(b.Reports, rep)
	}
	b.Instance = r.opts.Instance
	for uid, open := range r.pendingConns {
		if open {
			// With when its newest connection here opened; none when a
			// newer one to another instance replaced them meanwhile.
			if a, ok := r.agents[uid]; ok && a.connectedHere(r.opts.Instance) {
				if b.Connected == nil {
					b.Connected = map[[16]byte]time.Time{}
				}
				b.Connected[uid] = a.leftAt.Time()
			}
			continue
		}
		b.Disconnected = append(b.Disconnected, uid)
		// With the time it closed, which the others read its row at.
		if a, ok := r.agents[uid]; ok {
			if b.LastSeen == nil {
				b.LastSeen = map[[16]byte]time.Time{}
			}
			b.LastSeen[uid], a.seenWritten = a.lastSeen.Time(), a.lastSeen
			delete(r.pendingSeen, uid)
		}
	}
	clear(r.pendingConns)
	r.pendingRows = map[uuid.UUID]stamp.Stamp{}
	r.pendingEvents = map[uuid.UUID][]store.Event{}
	clear(r.pendingReports)
	r.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.store.Write(ctx, b); err != nil {
		r.log.Error("persisting agents failed; will retry", "agents", len(b.Agents), "err", err)
		r.requeue(b)
		return err
	}
	r.mu.Lock()
	for _, rec := range b.Agents {
		if a, ok := r.agents[uuid.UUID(rec.UID)]; ok {
			a.persisted = true
		}
	}
	r.mu.Unlock()
	r.forgetWritten(b.Events)
	return nil
}

// forgetWritten drops from memory the events just written of agents whose
// history is read from the store.
func (r *Registry) forgetWritten(written map[[16]byte][]store.Event) {
	if r.history == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, evs := range written {
		a, ok := r.agents[uid]
		if !ok || !a.historyInStore || len(evs) == 0 {
			continue
		}
		last := evs[len(evs)-1].Seq
		held := a.history()
		i := 0
		for i < len(held) && held[i].Seq <= last {
			i++
		}
		if i == len(held) {
			a.setHistory(nil)
		} else {
			a.setHistory(append([]store.Event(nil), held[i:]...))
		}
	}
}

// requeue puts a failed batch back so nothing is lost.
func (r *Registry) requeue(b store.Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range b.Agents {
		if a.EventsOnly { // such a row comes along with its events again
			continue
		}
		if newer, ok := r.pendingRows[uuid.UUID(a.UID)]; !ok || newer.Time().Before(a.Changed) {
			r.pendingRows[uuid.UUID(a.UID)] = stamp.Of(a.Changed)
		}
	}
	for uid := range b.LastSeen {
		r.pendingSeen[uuid.UUID(uid)] = struct{}{}
	}
	for uid, evs := range b.Events {
		r.pendingEvents[uuid.UUID(uid)] = append(evs, r.pendingEvents[uuid.UUID(uid)]...)
	}
	for uid := range b.Connected {
		if _, newer := r.pendingConns[uuid.UUID(uid)]; !newer {
			r.pendingConns[uuid.UUID(uid)] = true
		}
	}
	for _, uid := range b.Disconnected {
		if _, newer := r.pendingConns[uuid.UUID(uid)]; !newer {
			r.pendingConns[uuid.UUID(uid)] = false
		}
	}
	for _, rep := range b.Reports {
		k := reportKey{uuid.UUID(rep.UID), rep.Feature}
		if newer, ok := r.pendingReports[k]; !ok || newer.At.Before(rep.At) {
			r.pendingReports[k] = rep
		}
	}
	for _, uid := range b.Delete {
		r.pendingDeletes = append(r.pendingDeletes, uuid.UUID(uid))
	}
}

// Close stops the write-behind loop and flushes what is pending.
func (r *Registry) Close() error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	return r.Flush()
}
