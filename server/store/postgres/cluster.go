package postgres

import (
	"context"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// These serve instances sharing the database (server/cluster): they read
// what another instance wrote.

// LoadAgentsByUID reads the named agents with their newest keepEvents events.
func (d *DB) LoadAgentsByUID(ctx context.Context, uids [][16]byte, keepEvents int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	keys := uidKeys(uids)
	agents, err := d.scanAgentsSized(ctx, len(uids), ` WHERE uid = ANY($1::bytea[])`, keys)
	if err != nil {
		return nil, nil, err
	}
	var events map[[16]byte][]store.Event
	if keepEvents == 1 {
		events, err = d.newestEvents(ctx, keys)
	} else {
		events, err = d.scanEvents(ctx, keepEvents, ` WHERE uid = ANY($1::bytea[])`, keys)
	}
	if err != nil {
		return nil, nil, err
	}
	return agents, events, nil
}

// SeenSince returns the last-seen time of every agent connected to no
// instance (over plain HTTP, or gone) seen after t: agents connected to an
// instance are online while it lives (Beat).
func (d *DB) SeenSince(ctx context.Context, t time.Time) (map[[16]byte]time.Time, error) {
	rows, err := d.pool.Query(ctx, `SELECT uid, last_seen FROM agents WHERE instance = '' AND last_seen > $1`, t.UnixNano())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[[16]byte]time.Time{}
	for rows.Next() {
		var uid []byte
		var ns int64
		if err := rows.Scan(&uid, &ns); err != nil {
			return nil, err
		}
		if len(uid) == 16 {
			out[[16]byte(uid)] = time.Unix(0, ns).UTC()
		}
	}
	return out, rows.Err()
}

// LoadConfigsByUID reads the named agents' configuration assignments.
func (d *DB) LoadConfigsByUID(ctx context.Context, uids [][16]byte) (map[[16]byte][]byte, error) {
	return d.scanRecords(ctx, `SELECT uid, data FROM config_assignments WHERE uid = ANY($1::bytea[])`, uidKeys(uids))
}

// LoadBodies reads the configuration bodies of the given hashes.
func (d *DB) LoadBodies(ctx context.Context, hashes []string) (map[string][]byte, error) {
	rows, err := d.pool.Query(ctx, `SELECT hash, body FROM config_bodies WHERE hash = ANY($1::text[])`, hashes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanMap(rows, store.TextKey)
}

// Beat records that instance id lives at at (its agents' WebSockets with it).
func (d *DB) Beat(ctx context.Context, id string, at time.Time) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO instances(id, seen) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET seen = excluded.seen`, id, at.UnixNano())
	return err
}

// Instances returns when each instance that beat after t last did.
func (d *DB) Instances(ctx context.Context, t time.Time) (map[string]time.Time, error) {
	rows, err := d.pool.Query(ctx, `SELECT id, seen FROM instances WHERE seen > $1`, t.UnixNano())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var ns int64
		if err := rows.Scan(&id, &ns); err != nil {
			return nil, err
		}
		out[id] = time.Unix(0, ns).UTC()
	}
	return out, rows.Err()
}

// ForgetInstance removes an instance that stops, and those that have not
// beat since before t (dead for long).
func (d *DB) ForgetInstance(ctx context.Context, id string, t time.Time) error {
	_, err := d.pool.Exec(ctx, `DELETE FROM instances WHERE id = $1 OR seen < $2`, id, t.UnixNano())
	return err
}
