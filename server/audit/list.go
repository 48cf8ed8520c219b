package audit

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// Page sizes of List.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Query selects records: each non-empty string is an exact match, Since ≤
// time < Until when set, Limit records at most (0: DefaultLimit), after
// Cursor (a Page's Next) when set.
type Query struct {
	Actor, Action, Target, Outcome string
	Since, Until                   time.Time
	Limit                          int
	Cursor                         string
}

// Page is one page of a listing, newest first (by time, then id); Next is
// the cursor of the page after it, "" when there is none.
type Page struct {
	Records []Record `json:"records"`
	Next    string   `json:"next,omitempty"`
}

// ParamError is a query the trail refuses, naming the parameter.
type ParamError struct {
	Param string
	Msg   string
}

func (e *ParamError) Error() string { return e.Param + " " + e.Msg }

// List returns the page of records q selects. A query it refuses is a
// *ParamError.
func (t *Trail) List(ctx context.Context, q Query) (Page, error) {
	sq, err := q.stored()
	if err != nil {
		return Page{}, err
	}
	limit := sq.Limit
	sq.Limit++ // one more tells whether a page follows
	recs, err := t.store.ListAudit(ctx, sq)
	if err != nil {
		return Page{}, fmt.Errorf("audit trail: %w", err)
	}
	p := Page{Records: make([]Record, 0, min(len(recs), limit))}
	for _, r := range recs[:min(len(recs), limit)] {
		p.Records = append(p.Records, fromStore(r))
	}
	if len(recs) > limit {
		last := recs[limit-1]
		p.Next = encodeCursor(store.AuditPosition{Time: last.Time, ID: last.ID})
	}
	return p, nil
}

// stored checks q and returns it as the store's query.
func (q Query) stored() (store.AuditQuery, error) {
	sq := store.AuditQuery{Actor: q.Actor, Action: q.Action, Target: q.Target, Outcome: q.Outcome, Since: q.Since, Until: q.Until, Limit: q.Limit}
	for _, f := range []struct {
		param, v string
		max      int
	}{{"actor", q.Actor, MaxActor}, {"action", q.Action, MaxAction}, {"target", q.Target, MaxTarget}} {
		if len(f.v) > f.max {
			return sq, &ParamError{f.param, fmt.Sprintf("must be at most %d bytes (no record holds more), got %d", f.max, len(f.v))}
		}
	}
	if q.Outcome != "" && !slices.Contains(Outcomes, q.Outcome) {
		return sq, &ParamError{"outcome", fmt.Sprintf("must be one of %s, got %s", strings.Join(Outcomes, ", "), shown(q.Outcome))}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return sq, &ParamError{"until", fmt.Sprintf("must be after since (%s), got %s", q.Since.UTC().Format(time.RFC3339Nano), q.Until.UTC().Format(time.RFC3339Nano))}
	}
	switch {
	case q.Limit == 0:
		sq.Limit = DefaultLimit
	case q.Limit < 1 || q.Limit > MaxLimit:
		return sq, &ParamError{"limit", fmt.Sprintf("must be from 1 to %d, got %d", MaxLimit, q.Limit)}
	}
	if q.Cursor != "" {
		pos, err := decodeCursor(q.Cursor)
		if err != nil {
			return sq, &ParamError{"cursor", err.Error()}
		}
		sq.After = &pos
	}
	return sq, nil
}

// A cursor is the position of a page's last record: its time (Unix
// nanoseconds) and id, 16 bytes big-endian, in unpadded base64url. Only
// the trail reads it.
func encodeCursor(p store.AuditPosition) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(p.Time.UnixNano()))
	binary.BigEndian.PutUint64(b[8:], uint64(p.ID))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

var errCursor = errors.New("is not a cursor of this trail (pass the next of the page before, unchanged)")

// shown quotes a value for a message, cut to 64 bytes.
func shown(s string) string { return strconv.Quote(bounded(s, 64)) }

func decodeCursor(s string) (store.AuditPosition, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return store.AuditPosition{}, errCursor
	}
	id := int64(binary.BigEndian.Uint64(b[8:]))
	if id < 1 {
		return store.AuditPosition{}, errCursor
	}
	return store.AuditPosition{Time: time.Unix(0, int64(binary.BigEndian.Uint64(b[:8]))).UTC(), ID: id}, nil
}
