// Package sqlite is the default myriarchd store: embedded SQLite through the
// pure-Go modernc.org/sqlite driver (no cgo), in WAL mode, with schema
// migrations versioned in code.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/myriarch/myriarch/internal/fileperm"
	"github.com/myriarch/myriarch/internal/intern"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DB is a store.Store backed by one SQLite file.
type DB struct {
	db  *sql.DB
	dsn string
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) <dir>/myriarch.db and migrates it. The
// database and its -wal and -shm files are readable by the server's user
// only: it is created so (SQLite gives its other files the database's
// mode), and looser modes are tightened.
func Open(ctx context.Context, dir string) (*DB, error) {
	path := filepath.Join(dir, "myriarch.db")
	if err := private(path); err != nil {
		return nil, err
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// One connection: SQLite has one writer anyway, and this removes SQLITE_BUSY
	// between our own goroutines.
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return &DB{db: db, dsn: dsn}, nil
}

// Close releases the database.
func (d *DB) Close() error { return d.db.Close() }

func (d *DB) InsertToken(ctx context.Context, t tokens.Token) error {
	labels, _ := json.Marshal(t.Labels)
	_, err := d.db.ExecContext(ctx,
		`INSERT INTO tokens(id, name, labels, hash, created_at) VALUES(?,?,?,?,?)`,
		t.ID, t.Name, string(labels), t.Hash, t.CreatedAt.UnixNano())
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return fmt.Errorf("token name %q: %w", t.Name, store.ErrConflict)
	}
	return err
}

func (d *DB) RevokeToken(ctx context.Context, id string, at time.Time) error {
	res, err := d.db.ExecContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, at.UnixNano(), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("token %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (d *DB) ListTokens(ctx context.Context) ([]tokens.Token, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, name, labels, hash, created_at, revoked_at FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanTokens(rows)
}

// LoadAgents reads every agent and, at the same time on a second
// (read-only) connection, every event in key order, keeping the newest
// keepEvents of each agent (by sequence number, as Write trims). Both are
// plain scans: a start-up with 100 000 agents must not run a subquery per
// event row. Strings that repeat across rows (kinds, credentials, event
// types) are shared rather than allocated per row.
func (d *DB) LoadAgents(ctx context.Context, keepEvents int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	return store.LoadConcurrently(ctx, d.loadAgents, func(ctx context.Context) (map[[16]byte][]store.Event, error) {
		return d.loadEvents(ctx, keepEvents)
	})
}

func (d *DB) loadAgents(ctx context.Context) ([]store.Agent, error) {
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM agents`).Scan(&n); err != nil {
		return nil, err
	}
	rows, err := d.db.QueryContext(ctx, `SELECT uid, cred_kind, cred_id, kind, description, capabilities, health, token_labels, first_seen, last_seen, extra, instance, connected_at FROM agents`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var shared intern.Table
	agents := make([]store.Agent, 0, n)
	var uid, credKind, credID, kind, labels, instance sql.RawBytes
	for rows.Next() {
		var a store.Agent
		var first, last, caps, connected int64
		if err := rows.Scan(&uid, &credKind, &credID, &kind, &a.Description, &caps, &a.Health, &labels, &first, &last, &a.Extra, &instance, &connected); err != nil {
			return nil, err
		}
		if len(uid) != 16 {
			return nil, fmt.Errorf("agent row with a %d-byte uid", len(uid))
		}
		copy(a.UID[:], uid)
		a.Credential = store.Credential{Kind: shared.Bytes(credKind), ID: shared.Bytes(credID)}
		a.Kind = shared.Bytes(kind)
		a.Instance = shared.Bytes(instance)
		if connected != 0 {
			a.ConnectedAt = time.Unix(0, connected).UTC()
		}
		a.Capabilities = uint64(caps)
		if string(labels) == "{}" {
			a.TokenLabels = map[string]string{}
		} else if err := json.Unmarshal(labels, &a.TokenLabels); err != nil {
			return nil, fmt.Errorf("agent %x token labels: %w", a.UID, err)
		}
		a.FirstSeen = time.Unix(0, first).UTC()
		a.LastSeen = time.Unix(0, last).UTC()
		agents = append(agents, a)
	}
	return agents, rows.Err()
}

// loadEvents scans the events on a connection of its own, so that it runs
// beside loadAgents (WAL readers do not block each other).
func (d *DB) loadEvents(ctx context.Context, keepEvents int) (map[[16]byte][]store.Event, error) {
	ro, err := sql.Open("sqlite", d.dsn+"&mode=ro")
	if err != nil {
		return nil, err
	}
	defer ro.Close()
	ro.SetMaxOpenConns(1)
	events := map[[16]byte][]store.Event{}
	rows, err := ro.QueryContext(ctx, `SELECT uid, seq, time, type, message FROM events ORDER BY uid, seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var shared intern.Table
	var cur [16]byte
	var evs []store.Event
	done := func() {
		if len(evs) == 0 {
			return
		}
		// Rows are in seq order: keep those within keepEvents of the newest.
		if kept := store.NewestEvents(evs, keepEvents); kept != nil {
			events[cur] = kept
		}
		evs = nil
	}
	var uid, typ sql.RawBytes
	for rows.Next() {
		var e store.Event
		var ts, seq int64
		if err := rows.Scan(&uid, &seq, &ts, &typ, &e.Message); err != nil {
			return nil, err
		}
		if string(uid) != string(cur[:]) {
			done()
			copy(cur[:], uid)
		}
		e.Seq = uint64(seq)
		e.Time = time.Unix(0, ts).UTC()
		e.Type = shared.Bytes(typ)
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	done()
	return events, nil
}

func (d *DB) Write(ctx context.Context, b store.Batch) (err error) {
	if len(b.Delete) == 0 && len(b.Agents) == 0 && len(b.LastSeen) == 0 && len(b.Events) == 0 && len(b.Reports) == 0 && len(b.Relayed) == 0 &&
		len(b.Connected) == 0 && len(b.Disconnected) == 0 {
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
	for _, uid := range b.Delete {
		for _, q := range []string{`DELETE FROM events WHERE uid = ?`, `DELETE FROM relayed_events WHERE uid = ?`, `DELETE FROM reports WHERE uid = ?`,
			`DELETE FROM offers WHERE uid = ?`, `DELETE FROM config_assignments WHERE uid = ?`, `DELETE FROM agents WHERE uid = ?`} {
			if _, err := tx.ExecContext(ctx, q, uid[:]); err != nil {
				return fmt.Errorf("forget agent %x: %w", uid, err)
			}
		}
	}
	if len(b.Agents) > 0 {
		const insert = `INSERT INTO agents(uid, cred_kind, cred_id, kind, description, capabilities, health, token_labels, first_seen, last_seen, extra, changed_at)
			VALUES(?,?,?,?,?,?,?,?,?,?,?,?)`
		st, err := tx.PrepareContext(ctx, insert+`
			ON CONFLICT(uid) DO UPDATE SET cred_kind=excluded.cred_kind, cred_id=excluded.cred_id, kind=excluded.kind,
			description=excluded.description, capabilities=excluded.capabilities, health=excluded.health,
			token_labels=excluded.token_labels, first_seen=excluded.first_seen, last_seen=max(agents.last_seen, excluded.last_seen),
			extra=excluded.extra, changed_at=excluded.changed_at
			WHERE agents.changed_at <= excluded.changed_at`)
		if err != nil {
			return err
		}
		defer st.Close()
		// A row accompanying events only is stored when missing, never
		// over the stored one (store.Agent.EventsOnly).
		missing, err := tx.PrepareContext(ctx, insert+` ON CONFLICT(uid) DO NOTHING`)
		if err != nil {
			return err
		}
		defer missing.Close()
		for _, a := range b.Agents {
			st := st
			if a.EventsOnly {
				st = missing
			}
			labels, _ := json.Marshal(a.TokenLabels)
			if a.TokenLabels == nil {
				labels = []byte("{}")
			}
			if _, err := st.ExecContext(ctx, a.UID[:], a.Credential.Kind, a.Credential.ID, a.Kind, nonNil(a.Description), int64(a.Capabilities),
				nonNil(a.Health), string(labels), a.FirstSeen.UnixNano(), a.LastSeen.UnixNano(), nonNil(a.Extra), a.ChangedAt().UnixNano()); err != nil {
				return fmt.Errorf("agent %x: %w", a.UID, err)
			}
		}
	}
	if len(b.LastSeen) > 0 {
		st, err := tx.PrepareContext(ctx, `UPDATE agents SET last_seen = ? WHERE uid = ? AND last_seen < ?`)
		if err != nil {
			return err
		}
		defer st.Close()
		for uid, ts := range b.LastSeen {
			if _, err := st.ExecContext(ctx, ts.UnixNano(), uid[:], ts.UnixNano()); err != nil {
				return err
			}
		}
	}
	if len(b.Events) > 0 {
		ins, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO events(uid, seq, time, type, message) VALUES(?,?,?,?,?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		trim, err := tx.PrepareContext(ctx, `DELETE FROM events WHERE uid = ? AND seq <= ?`)
		if err != nil {
			return err
		}
		defer trim.Close()
		for uid, evs := range b.Events {
			var maxSeq uint64
			for _, e := range evs {
				if _, err := ins.ExecContext(ctx, uid[:], int64(e.Seq), e.Time.UnixNano(), e.Type, e.Message); err != nil {
					return err
				}
				maxSeq = max(maxSeq, e.Seq)
			}
			if b.KeepEvent > 0 && maxSeq > uint64(b.KeepEvent) {
				if _, err := trim.ExecContext(ctx, uid[:], int64(maxSeq)-int64(b.KeepEvent)); err != nil {
					return err
				}
			}
		}
	}
	if err := writeReports(ctx, tx, b.Reports); err != nil {
		return err
	}
	if err := writeRelayed(ctx, tx, b.Relayed); err != nil {
		return err
	}
	if err := writeConnections(ctx, tx, b); err != nil {
		return err
	}
	return tx.Commit()
}

func (d *DB) PutState(ctx context.Context, key string, value []byte) error {
	_, err := d.db.ExecContext(ctx, `INSERT INTO state(key, value) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value`, key, value)
	return err
}

func (d *DB) GetState(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := d.db.QueryRowContext(ctx, `SELECT value FROM state WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("state %q: %w", key, store.ErrNotFound)
	}
	return v, err
}

func (d *DB) DeleteState(ctx context.Context, key string) error {
	_, err := d.db.ExecContext(ctx, `DELETE FROM state WHERE key = ?`, key)
	return err
}

func (d *DB) ListState(ctx context.Context, prefix string) (map[string][]byte, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT key, value FROM state WHERE substr(key, 1, ?) = ?`, len(prefix), prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanMap(rows, store.TextKey)
}

// private creates the database file with mode 0600 when it does not exist
// and tightens the database's files to 0600.
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if _, _, err := fileperm.Tighten(p, 0o600); err != nil {
			return fmt.Errorf("restrict %s to its owner: %w", p, err)
		}
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// sqliteArg writes the n-th placeholder of a query the store package builds.
func sqliteArg(n int) string { return "?" + strconv.Itoa(n) }
