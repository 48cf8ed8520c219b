package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// AuditGenesis is the hash a trail that was never cut starts from: the
// prev of its first record.
var AuditGenesis = strings.Repeat("0", 64)

// AuditRecord is one record of the audit trail as it is stored: sealed,
// so that Hash covers Prev (the hash of the record before it) and the
// other fields. What the fields mean and how Hash is computed belong to
// package audit; a store keeps them exactly, Time to the nanosecond.
type AuditRecord struct {
	ID        int64
	Time      time.Time
	Actor     string
	Role      string
	Via       string
	Action    string
	Target    string
	Source    string
	RequestID string
	Outcome   string
	Detail    string
	Prev      string
	Hash      string
}

// AuditHead is where a trail ends, which the next record follows: the id
// and hash of its last record; of a trail whose every record was cut, the
// anchor of the last cut; of a trail never written, 0 and AuditGenesis.
type AuditHead struct {
	ID   int64
	Hash string
}

// AuditSeal makes the record that follows head, sealed: its ID must be
// head.ID+1 and its Prev head.Hash. It runs inside the store's writer
// transaction, so no other record can follow head meanwhile; of several
// appended together, each follows the one the seal before it made.
type AuditSeal func(head AuditHead) (AuditRecord, error)

// AuditCut is one cut of a trail's oldest records: how many were removed,
// the id of the last one and its hash, from which the records kept are
// proven (the anchor).
type AuditCut struct {
	Records int64
	UpTo    int64
	Hash    string
}

// AuditQuery selects records: every non-empty string field and non-zero
// time is a condition (Since ≤ time < Until), After is the keyset cursor
// (records strictly older in the listing's order: by time, then id), and
// Limit is how many at most.
type AuditQuery struct {
	Actor, Action, Target, Outcome string
	Since, Until                   time.Time
	After                          *AuditPosition
	Limit                          int
}

// AuditPosition is a record's place in a listing, newest first: by time,
// then by id.
type AuditPosition struct {
	Time time.Time
	ID   int64
}

// Audit persists the audit trail: records are appended, listed and read,
// never changed; only whole prefixes of the oldest are removed, by a cut
// that leaves its anchor behind. Both stores refuse a change of a record
// in the database itself, and a deletion beyond the anchor.
type Audit interface {
	// AppendAudit appends the records seals make, one after the other,
	// in one writer transaction that no other append (of this handle or
	// another on the same database) can interleave with: ids are dense
	// and each record's Prev is the hash of the one before it, whatever
	// the concurrency. It returns them as stored, or stores none.
	AppendAudit(ctx context.Context, seals ...AuditSeal) ([]AuditRecord, error)
	// ListAudit returns the records q selects, newest first (by time,
	// then id).
	ListAudit(ctx context.Context, q AuditQuery) ([]AuditRecord, error)
	// ReadAudit returns, from one snapshot, the anchor of the last cut
	// (ID 0 and AuditGenesis when never cut) and up to limit records with
	// ids above after, in id order: a reader walks the trail a batch at
	// a time, and a changed anchor tells it a cut happened meanwhile.
	ReadAudit(ctx context.Context, after int64, limit int) (AuditHead, []AuditRecord, error)
	// CutAudit removes, in one writer transaction, the oldest records up
	// to max of them, as long as each is older than before: a prefix of
	// the trail, stopping at its first record at or after before. When it
	// removes any, it sets the anchor to the last one removed and appends
	// the record seal(cut) makes for the cut; otherwise it changes
	// nothing and returns a zero AuditCut.
	CutAudit(ctx context.Context, before time.Time, max int, seal func(AuditCut) AuditSeal) (AuditCut, error)
}

// ErrAuditSeal marks a sealed record that does not follow the head it was
// given (its id or prev): the store refuses to store it.
var ErrAuditSeal = errors.New("audit record does not follow the trail's head")

// SealAudit reads the head and has each seal make the record following
// the one before: what both backends do inside their writer transaction
// before inserting the records.
func SealAudit(ctx context.Context, head func(context.Context) (AuditHead, error), seals []AuditSeal) ([]AuditRecord, error) {
	h, err := head(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the head of the trail: %w", err)
	}
	recs := make([]AuditRecord, 0, len(seals))
	for _, seal := range seals {
		r, err := seal(h)
		if err != nil {
			return nil, err
		}
		if err := CheckAuditSeal(h, r); err != nil {
			return nil, err
		}
		recs = append(recs, r)
		h = AuditHead{ID: r.ID, Hash: r.Hash}
	}
	return recs, nil
}

// CheckAuditSeal reports whether r follows head.
func CheckAuditSeal(head AuditHead, r AuditRecord) error {
	if r.ID != head.ID+1 || r.Prev != head.Hash {
		return fmt.Errorf("record %d with prev %.12s… after record %d with hash %.12s…: %w", r.ID, r.Prev, head.ID, head.Hash, ErrAuditSeal)
	}
	return nil
}
