package postgres

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/server/store"
)

// LoadOffers implements store.Offers.
func (d *DB) LoadOffers(ctx context.Context) (map[[16]byte][]byte, error) {
	return d.scanRecords(ctx, `SELECT uid, data FROM offers`)
}

// LoadOffersByUID reads the named collectors' offer records.
func (d *DB) LoadOffersByUID(ctx context.Context, uids [][16]byte) (map[[16]byte][]byte, error) {
	return d.scanRecords(ctx, `SELECT uid, data FROM offers WHERE uid = ANY($1::bytea[])`, uidKeys(uids))
}

// scanRecords reads (uid, data) rows.
func (d *DB) scanRecords(ctx context.Context, q string, args ...any) (map[[16]byte][]byte, error) {
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanMap(rows, store.UIDKey)
}

// WriteOffers implements store.Offers (fenced: see Campaign).
func (d *DB) WriteOffers(ctx context.Context, records map[[16]byte][]byte) error {
	if len(records) == 0 {
		return nil
	}
	uids := sortedKeys(records)
	return d.fenced(ctx, func(tx pgx.Tx) error {
		for lo := 0; lo < len(uids); lo += chunk {
			part := uids[lo:min(lo+chunk, len(uids))]
			keys, data := make([][]byte, len(part)), make([][]byte, len(part))
			for i, uid := range part {
				keys[i], data[i] = uid[:], nonNil(records[uid])
			}
			if _, err := tx.Exec(ctx, `INSERT INTO offers(uid, data) SELECT * FROM unnest($1::bytea[], $2::bytea[])
				ON CONFLICT (uid) DO UPDATE SET data = excluded.data`, keys, data); err != nil {
				return fmt.Errorf("offer records: %w", err)
			}
		}
		return nil
	})
}

// writeReports and writeRelayed are Write's parts for store.Batch's
// Reports and Relayed; tx is Write's transaction.
func writeReports(ctx context.Context, tx pgx.Tx, reports []store.Report) error {
	if len(reports) == 0 {
		return nil
	}
	// One row per agent and feature (the newest), in key order.
	newest := map[string]int{}
	for i, r := range reports {
		k := string(r.UID[:]) + r.Feature
		if j, ok := newest[k]; !ok || !reports[j].At.After(r.At) {
			newest[k] = i
		}
	}
	n := len(newest)
	uids, features, ats, data := make([][]byte, 0, n), make([]string, 0, n), make([]int64, 0, n), make([][]byte, 0, n)
	for i, r := range reports {
		if newest[string(r.UID[:])+r.Feature] != i {
			continue
		}
		uids, features, ats, data = append(uids, r.UID[:]), append(features, r.Feature), append(ats, r.At.UnixNano()), append(data, nonNil(r.Data))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO reports(uid, feature, at, data)
		SELECT * FROM unnest($1::bytea[], $2::text[], $3::int8[], $4::bytea[]) ORDER BY 1, 2
		ON CONFLICT (uid, feature) DO UPDATE SET at = excluded.at, data = excluded.data WHERE reports.at <= excluded.at`,
		uids, features, ats, data); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

func writeRelayed(ctx context.Context, tx pgx.Tx, relayed map[[16]byte][]store.Event) error {
	if len(relayed) == 0 {
		return nil
	}
	var (
		uids, msgs [][]byte
		times      []int64
		types      []string
	)
	for _, uid := range sortedKeys(relayed) {
		for _, e := range relayed[uid] {
			uids, times, types, msgs = append(uids, uid[:]), append(times, e.Time.UnixNano()), append(types, e.Type), append(msgs, []byte(e.Message))
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO relayed_events(uid, time, type, message)
		SELECT v.uid, v.time, v.type, v.message FROM unnest($1::bytea[], $2::int8[], $3::text[], $4::bytea[]) WITH ORDINALITY AS v(uid, time, type, message, n) ORDER BY v.n`,
		uids, times, types, msgs); err != nil {
		return fmt.Errorf("relayed events: %w", err)
	}
	return nil
}

// writeConnections is Write's part for store.Batch's Connected and
// Disconnected.
func writeConnections(ctx context.Context, tx pgx.Tx, b store.Batch) error {
	if len(b.Connected) > 0 {
		uids := sortedKeys(b.Connected)
		ts := make([]int64, len(uids))
		for i, uid := range uids {
			ts[i] = b.Connected[uid].UnixNano()
		}
		// A row naming a connection to another instance that opened later
		// (or at the same time, from an instance whose name sorts after)
		// stays as it is: that connection is the agent's newest.
		if _, err := tx.Exec(ctx, `UPDATE agents a SET instance = $1, connected_at = v.ts
			FROM unnest($2::bytea[], $3::int8[]) AS v(uid, ts)
			WHERE a.uid = v.uid AND (a.instance IN ('', $1) OR a.connected_at < v.ts OR (a.connected_at = v.ts AND a.instance < $1))`,
			b.Instance, uidKeys(uids), ts); err != nil {
			return fmt.Errorf("connections: %w", err)
		}
	}
	if len(b.Disconnected) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE agents SET instance = '', connected_at = 0 WHERE uid = ANY($2::bytea[]) AND instance = $1`, b.Instance, uidKeys(sortedUIDs(b.Disconnected))); err != nil {
			return fmt.Errorf("disconnections: %w", err)
		}
	}
	return nil
}

func sortedUIDs(uids [][16]byte) [][16]byte {
	out := slices.Clone(uids)
	slices.SortFunc(out, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// LoadReports implements store.Reports.
func (d *DB) LoadReports(ctx context.Context, uids [][16]byte) ([]store.Report, error) {
	q, args := `SELECT uid, feature, at, data FROM reports`, []any{}
	if uids != nil {
		q, args = q+` WHERE uid = ANY($1::bytea[])`, []any{uidKeys(uids)}
	}
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanReports(rows)
}

// RelayedAgents implements store.Reports.
func (d *DB) RelayedAgents(ctx context.Context) ([][16]byte, error) {
	rows, err := d.pool.Query(ctx, `SELECT DISTINCT uid FROM relayed_events`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanUIDs(rows)
}

// TakeRelayed implements store.Reports: the events are deleted as they are
// read, so two instances taking at once never both get one.
func (d *DB) TakeRelayed(ctx context.Context, uids [][16]byte) (map[[16]byte][]store.Event, error) {
	out := map[[16]byte][]store.Event{}
	if len(uids) == 0 {
		return out, nil
	}
	rows, err := d.pool.Query(ctx, `WITH taken AS (DELETE FROM relayed_events WHERE uid = ANY($1::bytea[]) RETURNING id, uid, time, type, message)
		SELECT uid, time, type, message FROM taken ORDER BY id`, uidKeys(uids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return out, store.ScanRelayed(rows, out)
}

func uidKeys(uids [][16]byte) [][]byte {
	keys := make([][]byte, len(uids))
	for i := range uids {
		keys[i] = uids[i][:]
	}
	return keys
}

// LoadEvents implements store.History.
func (d *DB) LoadEvents(ctx context.Context, uid [16]byte, keep int) ([]store.Event, error) {
	events, err := d.scanEvents(ctx, keep, ` WHERE uid = $1`, uid[:])
	if err != nil {
		return nil, err
	}
	return events[uid], nil
}
