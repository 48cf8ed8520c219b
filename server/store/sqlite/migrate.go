package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/myriarch/myriarch/server/store"
)

// migrations are applied in order; PRAGMA user_version records how many ran.
// Never edit a released migration: append a new one.
var migrations = []string{
	// 1: tokens, agents, events, state.
	`CREATE TABLE tokens (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL UNIQUE,
		labels TEXT NOT NULL,
		hash BLOB NOT NULL,
		created_at INTEGER NOT NULL,
		revoked_at INTEGER
	);
	CREATE TABLE agents (
		uid BLOB PRIMARY KEY,
		cred_kind TEXT NOT NULL,
		cred_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		description BLOB NOT NULL,
		capabilities INTEGER NOT NULL,
		health BLOB NOT NULL,
		token_labels TEXT NOT NULL,
		first_seen INTEGER NOT NULL,
		last_seen INTEGER NOT NULL,
		extra BLOB NOT NULL
	);
	CREATE TABLE events (
		uid BLOB NOT NULL,
		seq INTEGER NOT NULL,
		time INTEGER NOT NULL,
		type TEXT NOT NULL,
		message TEXT NOT NULL,
		PRIMARY KEY (uid, seq)
	) WITHOUT ROWID;
	CREATE TABLE state (
		key TEXT PRIMARY KEY,
		value BLOB NOT NULL
	);`,
	// 2: rendered configurations (one row per distinct body) and assignments.
	`CREATE TABLE config_bodies (
		hash TEXT PRIMARY KEY,
		body BLOB NOT NULL
	) WITHOUT ROWID;
	CREATE TABLE config_assignments (
		uid BLOB PRIMARY KEY,
		data BLOB NOT NULL
	) WITHOUT ROWID;`,
	// 3: the offers engine's records leave the collectors' rows for a
	// table of their own; agents' reports; events relayed between
	// instances; which instance an agent is connected to, and when each
	// instance last said it lives.
	`CREATE TABLE offers (
		uid BLOB PRIMARY KEY,
		data BLOB NOT NULL
	) WITHOUT ROWID;
	INSERT INTO offers(uid, data) SELECT uid, extra FROM agents WHERE kind = 'collector' AND length(extra) > 0;
	UPDATE agents SET extra = X'' WHERE kind = 'collector' AND length(extra) > 0;
	CREATE TABLE reports (
		uid BLOB NOT NULL,
		feature TEXT NOT NULL,
		at INTEGER NOT NULL,
		data BLOB NOT NULL,
		PRIMARY KEY (uid, feature)
	) WITHOUT ROWID;
	CREATE TABLE relayed_events (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		uid BLOB NOT NULL,
		time INTEGER NOT NULL,
		type TEXT NOT NULL,
		message TEXT NOT NULL
	);
	CREATE INDEX relayed_events_uid ON relayed_events(uid);
	ALTER TABLE agents ADD COLUMN instance TEXT NOT NULL DEFAULT '';
	CREATE TABLE instances (
		id TEXT PRIMARY KEY,
		seen INTEGER NOT NULL
	);`,
	// 4: when each agent's row last changed, which orders its writes
	// (last_seen moves on without the row changing).
	`ALTER TABLE agents ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0;
	UPDATE agents SET changed_at = last_seen;`,
	// 5: when the WebSocket the row's instance holds opened, which decides
	// between two instances the agent is connected to at once.
	`ALTER TABLE agents ADD COLUMN connected_at INTEGER NOT NULL DEFAULT 0;`,
	// 6: users, API keys (their secrets' SHA-256), console sessions and
	// one-time login links.
	`CREATE TABLE users (
		name TEXT PRIMARY KEY,
		role TEXT NOT NULL,
		fleets TEXT,
		password TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	);
	CREATE TABLE apikeys (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		role TEXT NOT NULL,
		fleets TEXT,
		hash BLOB NOT NULL UNIQUE,
		created_by TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER,
		revoked_at INTEGER
	);
	CREATE TABLE sessions (
		id BLOB PRIMARY KEY,
		principal BLOB NOT NULL,
		csrf TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		expires_at INTEGER NOT NULL
	);
	CREATE INDEX sessions_expiry ON sessions(expires_at);
	CREATE TABLE login_links (
		id BLOB PRIMARY KEY,
		principal BLOB NOT NULL,
		expires_at INTEGER NOT NULL
	);`,
	// 7: the audit trail: records chained by their hashes, ids assigned
	// densely by the append; an index per filter, each ordered as the
	// listing (newest first: time, then id, the rowid every index ends
	// with); the anchor the trail is proven from after a cut. The
	// triggers keep the records append-only: never changed, removed only
	// up to the anchor, which only moves forward.
	`CREATE TABLE audit (
		id INTEGER PRIMARY KEY,
		time INTEGER NOT NULL,
		actor TEXT NOT NULL,
		role TEXT NOT NULL,
		via TEXT NOT NULL,
		action TEXT NOT NULL,
		target TEXT NOT NULL,
		source TEXT NOT NULL,
		request_id TEXT NOT NULL,
		outcome TEXT NOT NULL,
		detail TEXT NOT NULL,
		prev TEXT NOT NULL,
		hash TEXT NOT NULL
	);
	CREATE INDEX audit_time ON audit(time);
	CREATE INDEX audit_actor ON audit(actor, time);
	CREATE INDEX audit_action ON audit(action, time);
	CREATE INDEX audit_target ON audit(target, time);
	CREATE INDEX audit_outcome ON audit(outcome, time);
	CREATE TABLE audit_anchor (
		one INTEGER PRIMARY KEY CHECK (one = 1),
		up_to INTEGER NOT NULL,
		hash TEXT NOT NULL
	);
	CREATE TRIGGER audit_never_changed BEFORE UPDATE ON audit
	BEGIN SELECT RAISE(ABORT, 'audit records are never changed'); END;
	CREATE TRIGGER audit_cut_only BEFORE DELETE ON audit
	WHEN OLD.id > coalesce((SELECT up_to FROM audit_anchor), 0)
	BEGIN SELECT RAISE(ABORT, 'audit records are removed only by a cut of the oldest, up to its anchor'); END;
	CREATE TRIGGER audit_anchor_forward BEFORE UPDATE ON audit_anchor
	WHEN NEW.up_to <= OLD.up_to
	BEGIN SELECT RAISE(ABORT, 'the audit anchor only moves forward'); END;
	CREATE TRIGGER audit_anchor_kept BEFORE DELETE ON audit_anchor
	BEGIN SELECT RAISE(ABORT, 'the audit anchor is never removed'); END;`,
	// 8: the notifications' outbox: a body per webhook, kept until it is
	// delivered or given up; next_at is 0 once settled, so the due ones
	// are a partial index away.
	`CREATE TABLE deliveries (
		id TEXT PRIMARY KEY,
		webhook TEXT NOT NULL,
		event TEXT NOT NULL,
		fleet TEXT NOT NULL,
		body BLOB NOT NULL,
		created_at INTEGER NOT NULL,
		attempts INTEGER NOT NULL,
		next_at INTEGER NOT NULL,
		delivered_at INTEGER NOT NULL,
		gave_up_at INTEGER NOT NULL,
		last_error TEXT NOT NULL
	);
	CREATE INDEX deliveries_due ON deliveries(next_at, id) WHERE next_at > 0;
	CREATE INDEX deliveries_created ON deliveries(created_at, id);`,
}

// SchemaVersion is the schema version this binary migrates a database to;
// every store backend has the same versions.
func SchemaVersion() int { return len(migrations) }

func migrate(ctx context.Context, db *sql.DB) error {
	var version int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if version > len(migrations) {
		return &store.SchemaTooNewError{Found: version, Known: len(migrations)}
	}
	for i := version; i < len(migrations); i++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, i+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	return nil
}
