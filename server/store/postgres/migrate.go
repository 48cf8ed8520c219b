package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/myriarch/myriarch/server/store"
)

// migrations are applied in order; myriarch_schema.version records how
// many ran. Version N holds the same tables as the SQLite store's version
// N. Never edit a released migration: append a new one (to both stores).
//
// Times are Unix nanoseconds as in SQLite (exact round trips). Event
// messages carry agents' text, which PostgreSQL's text type could refuse
// (NUL, invalid UTF-8) and so block a whole batch: they are bytea.
var migrations = []string{
	// 1: tokens, agents, events, state.
	`CREATE TABLE tokens (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL UNIQUE,
		labels TEXT NOT NULL,
		hash BYTEA NOT NULL,
		created_at BIGINT NOT NULL,
		revoked_at BIGINT
	);
	CREATE TABLE agents (
		uid BYTEA PRIMARY KEY,
		cred_kind TEXT NOT NULL,
		cred_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		description BYTEA NOT NULL,
		capabilities BIGINT NOT NULL,
		health BYTEA NOT NULL,
		token_labels TEXT NOT NULL,
		first_seen BIGINT NOT NULL,
		last_seen BIGINT NOT NULL,
		extra BYTEA NOT NULL
	);
	CREATE TABLE events (
		uid BYTEA NOT NULL,
		seq BIGINT NOT NULL,
		time BIGINT NOT NULL,
		type TEXT NOT NULL,
		message BYTEA NOT NULL,
		PRIMARY KEY (uid, seq)
	);
	CREATE TABLE state (
		key TEXT PRIMARY KEY,
		value BYTEA NOT NULL
	);`,
	// 2: rendered configurations (one row per distinct body) and assignments.
	`CREATE TABLE config_bodies (
		hash TEXT PRIMARY KEY,
		body BYTEA NOT NULL
	);
	CREATE TABLE config_assignments (
		uid BYTEA PRIMARY KEY,
		data BYTEA NOT NULL
	);`,
	// 3: the offers engine's records leave the collectors' rows for a
	// table of their own; agents' reports; events relayed between
	// instances; which instance an agent is connected to, and when each
	// instance last said it lives.
	`CREATE TABLE offers (
		uid BYTEA PRIMARY KEY,
		data BYTEA NOT NULL
	);
	INSERT INTO offers(uid, data) SELECT uid, extra FROM agents WHERE kind = 'collector' AND octet_length(extra) > 0;
	UPDATE agents SET extra = ''::bytea WHERE kind = 'collector' AND octet_length(extra) > 0;
	CREATE TABLE reports (
		uid BYTEA NOT NULL,
		feature TEXT NOT NULL,
		at BIGINT NOT NULL,
		data BYTEA NOT NULL,
		PRIMARY KEY (uid, feature)
	);
	CREATE TABLE relayed_events (
		id BIGSERIAL PRIMARY KEY,
		uid BYTEA NOT NULL,
		time BIGINT NOT NULL,
		type TEXT NOT NULL,
		message BYTEA NOT NULL
	);
	CREATE INDEX relayed_events_uid ON relayed_events(uid);
	ALTER TABLE agents ADD COLUMN instance TEXT NOT NULL DEFAULT '';
	CREATE TABLE instances (
		id TEXT PRIMARY KEY,
		seen BIGINT NOT NULL
	);`,
	// 4: when each agent's row last changed, which orders its writes
	// (last_seen moves on without the row changing).
	`ALTER TABLE agents ADD COLUMN changed_at BIGINT NOT NULL DEFAULT 0;
	UPDATE agents SET changed_at = last_seen;`,
	// 5: when the WebSocket the row's instance holds opened, which decides
	// between two instances the agent is connected to at once.
	`ALTER TABLE agents ADD COLUMN connected_at BIGINT NOT NULL DEFAULT 0;`,
	// 6: users, API keys (their secrets' SHA-256), console sessions and
	// one-time login links.
	`CREATE TABLE users (
		name TEXT PRIMARY KEY,
		role TEXT NOT NULL,
		fleets TEXT,
		password TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		updated_at BIGINT NOT NULL
	);
	CREATE TABLE apikeys (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		role TEXT NOT NULL,
		fleets TEXT,
		hash BYTEA NOT NULL UNIQUE,
		created_by TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT,
		revoked_at BIGINT
	);
	CREATE TABLE sessions (
		id BYTEA PRIMARY KEY,
		principal BYTEA NOT NULL,
		csrf TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL
	);
	CREATE INDEX sessions_expiry ON sessions(expires_at);
	CREATE TABLE login_links (
		id BYTEA PRIMARY KEY,
		principal BYTEA NOT NULL,
		expires_at BIGINT NOT NULL
	);`,
	// 7: the audit trail: records chained by their hashes, ids assigned
	// densely by the append; an index per filter, each ordered as the
	// listing (newest first: time, then id); the anchor the trail is
	// proven from after a cut. The triggers keep the records append-only:
	// never changed, removed only up to the anchor, which only moves
	// forward, and never truncated.
	`CREATE TABLE audit (
		id BIGINT PRIMARY KEY,
		time BIGINT NOT NULL,
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
	CREATE INDEX audit_time ON audit(time, id);
	CREATE INDEX audit_actor ON audit(actor, time, id);
	CREATE INDEX audit_action ON audit(action, time, id);
	CREATE INDEX audit_target ON audit(target, time, id);
	CREATE INDEX audit_outcome ON audit(outcome, time, id);
	CREATE TABLE audit_anchor (
		one INT PRIMARY KEY CHECK (one = 1),
		up_to BIGINT NOT NULL,
		hash TEXT NOT NULL
	);
	CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF TG_OP = 'DELETE' THEN
			IF OLD.id <= coalesce((SELECT up_to FROM audit_anchor WHERE one = 1), 0) THEN
				RETURN OLD;
			END IF;
		END IF;
		RAISE EXCEPTION 'audit records are never changed, and removed only by a cut of the oldest, up to its anchor (%)', TG_OP;
	END $$;
	CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit
		FOR EACH ROW EXECUTE FUNCTION audit_append_only();
	CREATE TRIGGER audit_never_truncated BEFORE TRUNCATE ON audit
		FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
	CREATE FUNCTION audit_anchor_forward() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF TG_OP = 'UPDATE' THEN
			IF NEW.up_to > OLD.up_to THEN
				RETURN NEW;
			END IF;
		END IF;
		RAISE EXCEPTION 'the audit anchor only moves forward (%)', TG_OP;
	END $$;
	CREATE TRIGGER audit_anchor_forward BEFORE UPDATE OR DELETE ON audit_anchor
		FOR EACH ROW EXECUTE FUNCTION audit_anchor_forward();
	CREATE TRIGGER audit_anchor_never_truncated BEFORE TRUNCATE ON audit_anchor
		FOR EACH STATEMENT EXECUTE FUNCTION audit_anchor_forward();`,
	// 8: the notifications' outbox: a body per webhook, kept until it is
	// delivered or given up; next_at is 0 once settled, so the due ones
	// are a partial index away.
	`CREATE TABLE deliveries (
		id TEXT PRIMARY KEY,
		webhook TEXT NOT NULL,
		event TEXT NOT NULL,
		fleet TEXT NOT NULL,
		body BYTEA NOT NULL,
		created_at BIGINT NOT NULL,
		attempts INT NOT NULL,
		next_at BIGINT NOT NULL,
		delivered_at BIGINT NOT NULL,
		gave_up_at BIGINT NOT NULL,
		last_error TEXT NOT NULL
	);
	CREATE INDEX deliveries_due ON deliveries(next_at, id) WHERE next_at > 0;
	CREATE INDEX deliveries_created ON deliveries(created_at, id);`,
}

// SchemaVersion is the schema version this binary migrates a database to.
func SchemaVersion() int { return len(migrations) }

// migrate brings the database to SchemaVersion in one transaction that
// holds the migration lock, so instances starting together migrate once:
// the others wait for the lock and find nothing left to do.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockMigrate); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS myriarch_schema (version INT NOT NULL)`); err != nil {
			return err
		}
		var version int
		err := tx.QueryRow(ctx, `SELECT version FROM myriarch_schema`).Scan(&version)
		switch {
		case err == pgx.ErrNoRows:
			if _, err := tx.Exec(ctx, `INSERT INTO myriarch_schema(version) VALUES (0)`); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if version > len(migrations) {
			return &store.SchemaTooNewError{Found: version, Known: len(migrations)}
		}
		for i := version; i < len(migrations); i++ {
			if _, err := tx.Exec(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migration %d: %w", i+1, err)
			}
		}
		if version < len(migrations) {
			if _, err := tx.Exec(ctx, `UPDATE myriarch_schema SET version = $1`, len(migrations)); err != nil {
				return err
			}
		}
		return nil
	})
}
