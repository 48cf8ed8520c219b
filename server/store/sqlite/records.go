package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// LoadOffers implements store.Offers.
func (d *DB) LoadOffers(ctx context.Context) (map[[16]byte][]byte, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT uid, data FROM offers`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanMap(rows, store.UIDKey)
}

// WriteOffers implements store.Offers.
func (d *DB) WriteOffers(ctx context.Context, records map[[16]byte][]byte) (err error) {
	if len(records) == 0 {
		return nil
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	st, err := tx.PrepareContext(ctx, `INSERT INTO offers(uid, data) VALUES(?,?) ON CONFLICT(uid) DO UPDATE SET data=excluded.data`)
	if err != nil {
		return err
	}
	defer st.Close()
	for uid, data := range records {
		if _, err := st.ExecContext(ctx, uid[:], nonNil(data)); err != nil {
			return fmt.Errorf("offer record %x: %w", uid, err)
		}
	}
	return tx.Commit()
}

// writeReports and writeRelayed are Write's parts for store.Batch's
// Reports and Relayed; tx is Write's transaction.
func writeReports(ctx context.Context, tx *sql.Tx, reports []store.Report) error {
	if len(reports) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO reports(uid, feature, at, data) VALUES(?,?,?,?)
		ON CONFLICT(uid, feature) DO UPDATE SET at=excluded.at, data=excluded.data WHERE reports.at <= excluded.at`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, r := range reports {
		if _, err := st.ExecContext(ctx, r.UID[:], r.Feature, r.At.UnixNano(), nonNil(r.Data)); err != nil {
			return fmt.Errorf("report %x %s: %w", r.UID, r.Feature, err)
		}
	}
	return nil
}

func writeRelayed(ctx context.Context, tx *sql.Tx, relayed map[[16]byte][]store.Event) error {
	if len(relayed) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO relayed_events(uid, time, type, message) VALUES(?,?,?,?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for uid, evs := range relayed {
		for _, e := range evs {
			if _, err := st.ExecContext(ctx, uid[:], e.Time.UnixNano(), e.Type, e.Message); err != nil {
				return fmt.Errorf("relayed event of %x: %w", uid, err)
			}
		}
	}
	return nil
}

// writeConnections is Write's part for store.Batch's Connected and
// Disconnected.
func writeConnections(ctx context.Context, tx *sql.Tx, b store.Batch) error {
	if len(b.Connected) > 0 {
		// A row naming a connection to another instance that opened later
		// (or at the same time, from an instance whose name sorts after)
		// stays as it is: that connection is the agent's newest.
		st, err := tx.PrepareContext(ctx, `UPDATE agents SET instance = ?1, connected_at = ?2
			WHERE uid = ?3 AND (instance IN ('', ?1) OR connected_at < ?2 OR (connected_at = ?2 AND instance < ?1))`)
		if err != nil {
			return err
		}
		defer st.Close()
		for uid, at := range b.Connected {
			if _, err := st.ExecContext(ctx, b.Instance, at.UnixNano(), uid[:]); err != nil {
				return fmt.Errorf("connection of %x: %w", uid, err)
			}
		}
	}
	if len(b.Disconnected) > 0 {
		st, err := tx.PrepareContext(ctx, `UPDATE agents SET instance = '', connected_at = 0 WHERE uid = ? AND instance = ?`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, uid := range b.Disconnected {
			if _, err := st.ExecContext(ctx, uid[:], b.Instance); err != nil {
				return fmt.Errorf("disconnection of %x: %w", uid, err)
			}
		}
	}
	return nil
}

// LoadReports implements store.Reports.
func (d *DB) LoadReports(ctx context.Context, uids [][16]byte) ([]store.Report, error) {
	if uids == nil {
		return d.loadReports(ctx, `SELECT uid, feature, at, data FROM reports`)
	}
	var out []store.Report
	for part := range slices.Chunk(uids, maxVars) {
		got, err := d.loadReports(ctx, `SELECT uid, feature, at, data FROM reports WHERE uid IN (`+placeholders(len(part))+`)`, uidArgs(part)...)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

func (d *DB) loadReports(ctx context.Context, q string, args ...any) ([]store.Report, error) {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanReports(rows)
}

// RelayedAgents implements store.Reports.
func (d *DB) RelayedAgents(ctx context.Context) ([][16]byte, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT DISTINCT uid FROM relayed_events`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanUIDs(rows)
}

// TakeRelayed implements store.Reports.
func (d *DB) TakeRelayed(ctx context.Context, uids [][16]byte) (out map[[16]byte][]store.Event, err error) {
	out = map[[16]byte][]store.Event{}
	if len(uids) == 0 {
		return out, nil
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	for part := range slices.Chunk(uids, maxVars) {
		in := `(` + placeholders(len(part)) + `)`
		rows, err := tx.QueryContext(ctx, `SELECT uid, time, type, message FROM relayed_events WHERE uid IN `+in+` ORDER BY id`, uidArgs(part)...)
		if err != nil {
			return nil, err
		}
		err = store.ScanRelayed(rows, out)
		rows.Close()
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM relayed_events WHERE uid IN `+in, uidArgs(part)...); err != nil {
			return nil, err
		}
	}
	return out, tx.Commit()
}

// maxVars bounds the parameters of one statement (SQLite refuses too many).
const maxVars = 500

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func uidArgs(uids [][16]byte) []any {
	args := make([]any, len(uids))
	for i := range uids {
		args[i] = uids[i][:]
	}
	return args
}

// LoadEvents implements store.History.
func (d *DB) LoadEvents(ctx context.Context, uid [16]byte, keep int) ([]store.Event, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT seq, time, type, message FROM events WHERE uid = ? ORDER BY seq`, uid[:])
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var evs []store.Event
	for rows.Next() {
		var e store.Event
		var seq, ts int64
		if err := rows.Scan(&seq, &ts, &e.Type, &e.Message); err != nil {
			return nil, err
		}
		e.Seq, e.Time = uint64(seq), time.Unix(0, ts).UTC()
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return store.NewestEvents(evs, keep), nil
}
