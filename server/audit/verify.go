package audit

import (
	"context"
	"fmt"

	"github.com/myriarch/myriarch/server/store"
)

// verifyBatch is how many records verification reads at a time: memory
// stays bounded however long the trail, and a store with one connection
// (SQLite) serves appends between batches.
const verifyBatch = 2000

// verifyRestarts bounds how often verification starts again because a
// cut moved the anchor while it read.
const verifyRestarts = 5

// Verification is the result of Verify: whether the whole trail follows
// from its anchor, how many records were proven (every one when OK), and
// otherwise the first record that does not follow and why.
type Verification struct {
	OK       bool   `json:"ok"`
	Records  int64  `json:"records"`
	FirstBad int64  `json:"firstBad,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Verify walks the trail from its anchor in id order, a batch at a time:
// each record must have the next id, name the hash of the record before
// it as its prev (the anchor's for the first), and have the hash of its
// own content after that prev. The anchor itself must be what the latest
// audit.cut record says it cut up to (64 zeros before id 1 when nothing
// was ever cut). A cut that moves the anchor meanwhile starts the walk
// again from the new anchor.
func (t *Trail) Verify(ctx context.Context) (Verification, error) {
	for range verifyRestarts {
		v, moved, err := t.verifyFrom(ctx)
		if err != nil || !moved {
			return v, err
		}
		t.log.Info("audit trail cut during its verification; verifying again from the new anchor")
	}
	return Verification{}, fmt.Errorf("audit trail: cut %d times during its verification; try again", verifyRestarts)
}

// verifyFrom is one walk; moved says the anchor changed during it.
func (t *Trail) verifyFrom(ctx context.Context) (v Verification, moved bool, err error) {
	anchor, batch, err := t.store.ReadAudit(ctx, 0, t.verifyBatch)
	if err != nil {
		return v, false, fmt.Errorf("audit trail: %w", err)
	}
	w := walk{prev: anchor}
	for {
		for _, s := range batch {
			if bad := w.next(fromStore(s)); bad != "" {
				return Verification{Records: w.proven, FirstBad: s.ID, Reason: bad}, false, nil
			}
		}
		if len(batch) < t.verifyBatch {
			break
		}
		var now store.AuditHead
		if now, batch, err = t.store.ReadAudit(ctx, w.prev.ID, t.verifyBatch); err != nil {
			return v, false, fmt.Errorf("audit trail: %w", err)
		}
		if now != anchor {
			return v, true, nil
		}
	}
	if bad := w.anchored(anchor); bad != "" {
		return Verification{FirstBad: anchor.ID + 1, Reason: bad}, false, nil
	}
	return Verification{OK: true, Records: w.proven}, false, nil
}

// walk is verification's state: the record before the next (the anchor
// at first), how many followed, and what the latest cut's record says.
type walk struct {
	prev   store.AuditHead
	proven int64
	cut    *store.AuditCut
}

// next checks r after the records before it: "" when it follows, else why not.
func (w *walk) next(r Record) string {
	switch {
	case r.ID <= w.prev.ID: // only before the first record: ids are read in order
		return fmt.Sprintf("id %d is not after the anchor, id %d, up to which records were cut", r.ID, w.prev.ID)
	case r.ID != w.prev.ID+1 && w.proven == 0 && w.prev.ID == 0:
		return fmt.Sprintf("the trail starts at id %d, but no cut's record says %s cut", r.ID, records(1, r.ID-1, "was", "were"))
	case r.ID != w.prev.ID+1 && w.proven == 0:
		return fmt.Sprintf("the trail starts at id %d, but its anchor is id %d: %s missing", r.ID, w.prev.ID, records(w.prev.ID+1, r.ID-1, "is", "are"))
	case r.ID != w.prev.ID+1:
		return fmt.Sprintf("id %d follows id %d: %s missing", r.ID, w.prev.ID, records(w.prev.ID+1, r.ID-1, "is", "are"))
	case r.Prev != w.prev.Hash && w.proven == 0:
		return fmt.Sprintf("its prev is not the hash of record %d, the anchor it follows (%.12s…)", w.prev.ID, w.prev.Hash)
	case r.Prev != w.prev.Hash:
		return fmt.Sprintf("its prev is not the hash of record %d (%.12s…)", w.prev.ID, w.prev.Hash)
	case r.HashAfter(r.Prev) != r.Hash:
		return "its hash is not the hash of its content: the record was changed"
	}
	if r.Action == ActionCut {
		c, ok := parseCutDetail(r.Detail)
		if !ok {
			return "its detail is not a cut's: " + r.Detail
		}
		w.cut = &c
	}
	w.prev = store.AuditHead{ID: r.ID, Hash: r.Hash}
	w.proven++
	return ""
}

// anchored checks the anchor against the latest cut's record, once every
// record followed: "" when it matches (or nothing was ever cut).
func (w *walk) anchored(anchor store.AuditHead) string {
	switch {
	case w.cut == nil && anchor.ID == 0:
		return ""
	case w.cut == nil:
		return fmt.Sprintf("the trail starts after id %d, but no audit.cut record says so", anchor.ID)
	case w.cut.UpTo != anchor.ID || w.cut.Hash != anchor.Hash:
		return fmt.Sprintf("the trail starts after id %d (hash %.12s…), but the latest audit.cut record cut up to id %d (hash %.12s…)",
			anchor.ID, anchor.Hash, w.cut.UpTo, w.cut.Hash)
	}
	return ""
}

// records names the records from to to, with the verb that agrees.
func records(from, to int64, one, more string) string {
	if from == to {
		return fmt.Sprintf("record %d %s", from, one)
	}
	return fmt.Sprintf("records %d to %d %s", from, to, more)
}
