package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/myriarch/myriarch/server/tokens"
)

// What every backend does the same way with the rows it reads.

// Rows is what both backends' query results offer (pgx.Rows, *sql.Rows);
// the Scan* functions read them to the end (the caller closes them).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// UIDKey is a key column holding an instance UID; other lengths are skipped.
func UIDKey(b []byte) ([16]byte, bool) {
	if len(b) != 16 {
		return [16]byte{}, false
	}
	return [16]byte(b), true
}

// TextKey is a key column holding text.
func TextKey(b []byte) (string, bool) { return string(b), true }

// ScanMap reads rows of (key, value) into a map; key turns the key
// column into K (false skips the row).
func ScanMap[K comparable](rows Rows, key func([]byte) (K, bool)) (map[K][]byte, error) {
	out := map[K][]byte{}
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		if kk, ok := key(k); ok {
			out[kk] = v
		}
	}
	return out, rows.Err()
}

// ScanUIDs reads rows of one instance UID column.
func ScanUIDs(rows Rows) ([][16]byte, error) {
	var out [][16]byte
	for rows.Next() {
		var uid []byte
		if err := rows.Scan(&uid); err != nil {
			return nil, err
		}
		if len(uid) == 16 {
			out = append(out, [16]byte(uid))
		}
	}
	return out, rows.Err()
}

// ScanReports reads rows of (uid, feature, at in Unix nanoseconds, data).
func ScanReports(rows Rows) ([]Report, error) {
	var out []Report
	for rows.Next() {
		var r Report
		var uid []byte
		var at int64
		if err := rows.Scan(&uid, &r.Feature, &at, &r.Data); err != nil {
			return nil, err
		}
		if len(uid) == 16 {
			r.UID, r.At = [16]byte(uid), time.Unix(0, at).UTC()
			out = append(out, r)
		}
	}
	return out, rows.Err()
}

// ScanRelayed adds rows of relayed events (uid, time in Unix nanoseconds,
// type, message) to out, in the rows' order.
func ScanRelayed(rows Rows, out map[[16]byte][]Event) error {
	for rows.Next() {
		var uid, msg []byte
		var ts int64
		var e Event
		if err := rows.Scan(&uid, &ts, &e.Type, &msg); err != nil {
			return err
		}
		if len(uid) == 16 {
			e.Time, e.Message = time.Unix(0, ts).UTC(), string(msg)
			out[[16]byte(uid)] = append(out[[16]byte(uid)], e)
		}
	}
	return rows.Err()
}

// ScanTokens reads rows of (id, name, labels, hash, created_at, revoked_at).
func ScanTokens(rows Rows) ([]tokens.Token, error) {
	var out []tokens.Token
	for rows.Next() {
		var t tokens.Token
		var labels []byte
		var created int64
		var revoked *int64
		if err := rows.Scan(&t.ID, &t.Name, &labels, &t.Hash, &created, &revoked); err != nil {
			return nil, err
		}
		if err := tokenFromRow(&t, labels, created, revoked); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// tokenFromRow completes t (id, name and hash already read) from a tokens
// row's labels (JSON), creation time and revocation time (nil: not
// revoked), both Unix nanoseconds.
func tokenFromRow(t *tokens.Token, labels []byte, created int64, revoked *int64) error {
	if err := json.Unmarshal(labels, &t.Labels); err != nil {
		return fmt.Errorf("token %s labels: %w", t.ID, err)
	}
	t.CreatedAt = time.Unix(0, created).UTC()
	if revoked != nil {
		r := time.Unix(0, *revoked).UTC()
		t.RevokedAt = &r
	}
	return nil
}

// LoadConcurrently is LoadAgents of a backend: the events are read (on a
// connection of their own) while the agents are.
func LoadConcurrently(ctx context.Context, agents func(context.Context) ([]Agent, error),
	events func(context.Context) (map[[16]byte][]Event, error)) ([]Agent, map[[16]byte][]Event, error) {
	type loaded struct {
		events map[[16]byte][]Event
		err    error
	}
	evc := make(chan loaded, 1)
	go func() {
		evs, err := events(ctx)
		evc <- loaded{evs, err}
	}()
	list, err := agents(ctx)
	ev := <-evc
	if err != nil {
		return nil, nil, fmt.Errorf("agents: %w", err)
	}
	if ev.err != nil {
		return nil, nil, fmt.Errorf("events: %w", ev.err)
	}
	return list, ev.events, nil
}
