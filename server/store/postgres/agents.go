package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/internal/intern"
	"github.com/myriarch/myriarch/server/store"
)

// chunk bounds the rows of one statement, so that a flush of 100 000
// agents is a few statements of bounded size in one transaction.
const chunk = 5000

// Write applies the batch in one transaction (a row older than the stored
// one, by last seen, is left out: see store.Agents). Each kind of row goes in a
// few statements over arrays (unnest), not one statement per row. Rows
// are written in UID order, so that instances flushing overlapping
// batches lock rows in the same order (a deadlock, should one still
// happen, is retried).
func (d *DB) Write(ctx context.Context, b store.Batch) error {
	if len(b.Delete) == 0 && len(b.Agents) == 0 && len(b.LastSeen) == 0 && len(b.Events) == 0 && len(b.Reports) == 0 && len(b.Relayed) == 0 &&
		len(b.Connected) == 0 && len(b.Disconnected) == 0 {
		return nil
	}
	agents := sortedAgents(b.Agents)
	seen := sortedKeys(b.LastSeen)
	evUIDs := sortedKeys(b.Events)
	return d.inTx(ctx, func(tx pgx.Tx) error {
		if len(b.Delete) > 0 {
			gone := make([][]byte, len(b.Delete))
			for i := range b.Delete {
				gone[i] = b.Delete[i][:]
			}
			for _, table := range []string{"events", "relayed_events", "reports", "offers", "config_assignments", "agents"} {
				if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE uid = ANY($1::bytea[])`, gone); err != nil {
					return fmt.Errorf("forget agents (%s): %w", table, err)
				}
			}
		}
		full, eventsOnly := splitEventsOnly(agents)
		for _, rows := range []struct {
			agents     []store.Agent
			eventsOnly bool
		}{{full, false}, {eventsOnly, true}} {
			for lo := 0; lo < len(rows.agents); lo += chunk {
				if err := upsertAgents(ctx, tx, rows.agents[lo:min(lo+chunk, len(rows.agents))], rows.eventsOnly); err != nil {
					return err
				}
			}
		}
		for lo := 0; lo < len(seen); lo += chunk {
			part := seen[lo:min(lo+chunk, len(seen))]
			uids, ts := make([][]byte, len(part)), make([]int64, len(part))
			for i, uid := range part {
				uids[i], ts[i] = uid[:], b.LastSeen[uid].UnixNano()
			}
			if _, err := tx.Exec(ctx, `UPDATE agents a SET last_seen = v.ts
				FROM unnest($1::bytea[], $2::int8[]) AS v(uid, ts)
				WHERE a.uid = v.uid AND a.last_seen < v.ts`, uids, ts); err != nil {
				return fmt.Errorf("last seen: %w", err)
			}
		}
		for lo := 0; lo < len(evUIDs); lo += chunk {
			if err := writeEvents(ctx, tx, evUIDs[lo:min(lo+chunk, len(evUIDs))], b.Events, b.KeepEvent); err != nil {
				return err
			}
		}
		if err := writeReports(ctx, tx, b.Reports); err != nil {
			return err
		}
		if err := writeRelayed(ctx, tx, b.Relayed); err != nil {
			return err
		}
		return writeConnections(ctx, tx, b)
	})
}

// splitEventsOnly separates the rows written only to accompany events
// (store.Agent.EventsOnly), keeping each part's order.
func splitEventsOnly(agents []store.Agent) (full, eventsOnly []store.Agent) {
	for _, a := range agents {
		if a.EventsOnly {
			eventsOnly = append(eventsOnly, a)
		} else {
			full = append(full, a)
		}
	}
	return full, eventsOnly
}

// upsertAgents writes rows newer than (or as new as) the stored ones; with
// eventsOnly, rows accompanying events, stored only where none is.
func upsertAgents(ctx context.Context, tx pgx.Tx, agents []store.Agent, eventsOnly bool) error {
	n := len(agents)
	var (
		uids, descs, healths, extras        = make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
		credKinds, credIDs, kinds, labelSet = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		caps, firsts, lasts, changed        = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	)
	for i := range agents {
		a := &agents[i]
		uids[i] = a.UID[:]
		credKinds[i], credIDs[i], kinds[i] = a.Credential.Kind, a.Credential.ID, a.Kind
		descs[i], healths[i], extras[i] = nonNil(a.Description), nonNil(a.Health), nonNil(a.Extra)
		caps[i], firsts[i], lasts[i], changed[i] = int64(a.Capabilities), a.FirstSeen.UnixNano(), a.LastSeen.UnixNano(), a.ChangedAt().UnixNano()
		labelSet[i] = "{}"
		if a.TokenLabels != nil {
			l, _ := json.Marshal(a.TokenLabels)
			labelSet[i] = string(l)
		}
	}
	conflict := `ON CONFLICT (uid) DO UPDATE SET cred_kind=excluded.cred_kind, cred_id=excluded.cred_id, kind=excluded.kind,
		description=excluded.description, capabilities=excluded.capabilities, health=excluded.health,
		token_labels=excluded.token_labels, first_seen=excluded.first_seen, last_seen=GREATEST(agents.last_seen, excluded.last_seen),
		extra=excluded.extra, changed_at=excluded.changed_at
		WHERE agents.changed_at <= excluded.changed_at`
	if eventsOnly {
		conflict = `ON CONFLICT (uid) DO NOTHING`
	}
	_, err := tx.Exec(ctx, `INSERT INTO agents(uid, cred_kind, cred_id, kind, description, capabilities, health, token_labels, first_seen, last_seen, extra, changed_at)
		SELECT * FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::int8[], $7::bytea[], $8::text[], $9::int8[], $10::int8[], $11::bytea[], $12::int8[])
		`+conflict,
		uids, credKinds, credIDs, kinds, descs, caps, healths, labelSet, firsts, lasts, extras, changed)
	if err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	return nil
}

// writeEvents adds (or replaces, by sequence number) the events of uids
// and trims each agent to keep events below its newest.
func writeEvents(ctx context.Context, tx pgx.Tx, uids [][16]byte, events map[[16]byte][]store.Event, keep int) error {
	var (
		evUID, msgs [][]byte
		seqs, times []int64
		types       []string
		trimUID     [][]byte
		trimUpTo    []int64
		bySeq       = map[uint64]int{}
	)
	for _, uid := range uids {
		clear(bySeq)
		var maxSeq uint64
		for _, e := range events[uid] {
			// A sequence number given twice keeps the last, as replacing row by row would.
			if i, ok := bySeq[e.Seq]; ok {
				times[i], types[i], msgs[i] = e.Time.UnixNano(), e.Type, []byte(e.Message)
				continue
			}
			bySeq[e.Seq] = len(seqs)
			evUID = append(evUID, uid[:])
			seqs = append(seqs, int64(e.Seq))
			times = append(times, e.Time.UnixNano())
			types = append(types, e.Type)
			msgs = append(msgs, []byte(e.Message))
			maxSeq = max(maxSeq, e.Seq)
		}
		if keep > 0 && maxSeq > uint64(keep) {
			trimUID = append(trimUID, uid[:])
			trimUpTo = append(trimUpTo, int64(maxSeq)-int64(keep))
		}
	}
	if len(seqs) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO events(uid, seq, time, type, message)
			SELECT * FROM unnest($1::bytea[], $2::int8[], $3::int8[], $4::text[], $5::bytea[])
			ON CONFLICT (uid, seq) DO UPDATE SET time=excluded.time, type=excluded.type, message=excluded.message`,
			evUID, seqs, times, types, msgs); err != nil {
			return fmt.Errorf("events: %w", err)
		}
	}
	if len(trimUID) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM events e USING unnest($1::bytea[], $2::int8[]) AS t(uid, upto)
			WHERE e.uid = t.uid AND e.seq <= t.upto`, trimUID, trimUpTo); err != nil {
			return fmt.Errorf("trimming events: %w", err)
		}
	}
	return nil
}

// sortedAgents returns the agents by UID, one row per UID (the last given).
func sortedAgents(in []store.Agent) []store.Agent {
	last := make(map[[16]byte]int, len(in))
	for i := range in {
		last[in[i].UID] = i
	}
	out := make([]store.Agent, 0, len(last))
	for i := range in {
		if last[in[i].UID] == i {
			out = append(out, in[i])
		}
	}
	slices.SortFunc(out, func(a, b store.Agent) int { return bytes.Compare(a.UID[:], b.UID[:]) })
	return out
}

func sortedKeys[V any](m map[[16]byte]V) [][16]byte {
	out := make([][16]byte, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// LoadAgents reads every agent and, at the same time on another pooled
// connection, every event in key order, keeping the newest keepEvents of
// each agent. Strings that repeat across rows are shared.
func (d *DB) LoadAgents(ctx context.Context, keepEvents int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	return store.LoadConcurrently(ctx, d.loadAgents, func(ctx context.Context) (map[[16]byte][]store.Event, error) {
		return d.loadEvents(ctx, keepEvents)
	})
}

func (d *DB) loadAgents(ctx context.Context) ([]store.Agent, error) {
	return d.scanAgents(ctx, "")
}

// scanAgents reads the agents rows that where (a WHERE clause of args, or
// "" for all) selects.
func (d *DB) scanAgents(ctx context.Context, where string, args ...any) ([]store.Agent, error) {
	return d.scanAgentsSized(ctx, -1, where, args...)
}

// scanAgentsSized is scanAgents expecting n rows (-1: counted first, so
// a load of every agent allocates once).
func (d *DB) scanAgentsSized(ctx context.Context, n int, where string, args ...any) ([]store.Agent, error) {
	if n < 0 {
		if err := d.pool.QueryRow(ctx, `SELECT COUNT(*) FROM agents`+where, args...).Scan(&n); err != nil {
			return nil, err
		}
	}
	rows, err := d.pool.Query(ctx, `SELECT uid, cred_kind, cred_id, kind, description, capabilities, health, token_labels, first_seen, last_seen, extra, instance, connected_at FROM agents`+where,
		append([]any{binaryResults}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var shared intern.Table
	agents := make([]store.Agent, 0, n)
	for rows.Next() {
		// Raw values point into the connection's buffer until the next row:
		// what is kept is copied (or interned).
		raw := rows.RawValues()
		if len(raw) != 13 || len(raw[0]) != 16 {
			return nil, fmt.Errorf("agent row with a %d-byte uid", len(raw[0]))
		}
		var a store.Agent
		copy(a.UID[:], raw[0])
		a.Credential = store.Credential{Kind: shared.Bytes(raw[1]), ID: shared.Bytes(raw[2])}
		a.Kind = shared.Bytes(raw[3])
		a.Description = bytes.Clone(nonNil(raw[4]))
		a.Capabilities = uint64(int8Value(raw[5]))
		a.Health = bytes.Clone(nonNil(raw[6]))
		if string(raw[7]) == "{}" {
			a.TokenLabels = map[string]string{}
		} else if err := json.Unmarshal(raw[7], &a.TokenLabels); err != nil {
			return nil, fmt.Errorf("agent %x token labels: %w", a.UID, err)
		}
		a.FirstSeen = time.Unix(0, int8Value(raw[8])).UTC()
		a.LastSeen = time.Unix(0, int8Value(raw[9])).UTC()
		a.Extra = bytes.Clone(nonNil(raw[10]))
		a.Instance = shared.Bytes(raw[11])
		if ns := int8Value(raw[12]); ns != 0 {
			a.ConnectedAt = time.Unix(0, ns).UTC()
		}
		agents = append(agents, a)
	}
	return agents, rows.Err()
}

func (d *DB) loadEvents(ctx context.Context, keepEvents int) (map[[16]byte][]store.Event, error) {
	return d.scanEvents(ctx, keepEvents, "")
}

// scanEvents reads the events rows that where selects, keeping each
// agent's newest keepEvents.
func (d *DB) scanEvents(ctx context.Context, keepEvents int, where string, args ...any) (map[[16]byte][]store.Event, error) {
	q := `SELECT uid, seq, time, type, message FROM events` + where + ` ORDER BY uid, seq`
	if keepEvents == 1 { // the newest of each agent, found by the primary key
		q = `SELECT DISTINCT ON (uid) uid, seq, time, type, message FROM events` + where + ` ORDER BY uid, seq DESC`
	}
	rows, err := d.pool.Query(ctx, q, append([]any{binaryResults}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := map[[16]byte][]store.Event{}
	var shared intern.Table
	var cur [16]byte
	var evs []store.Event
	done := func() {
		if kept := store.NewestEvents(evs, keepEvents); kept != nil {
			events[cur] = kept
		}
		evs = nil
	}
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) != 5 || len(raw[0]) != 16 {
			return nil, fmt.Errorf("event row with a %d-byte uid", len(raw[0]))
		}
		if !bytes.Equal(raw[0], cur[:]) {
			done()
			copy(cur[:], raw[0])
		}
		evs = append(evs, store.Event{
			Seq:     uint64(int8Value(raw[1])),
			Time:    time.Unix(0, int8Value(raw[2])).UTC(),
			Type:    shared.Bytes(raw[3]),
			Message: string(raw[4]),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	done()
	return events, nil
}

// newestEvents reads the newest event of each agent of keys, one index
// lookup each.
func (d *DB) newestEvents(ctx context.Context, keys [][]byte) (map[[16]byte][]store.Event, error) {
	rows, err := d.pool.Query(ctx, `SELECT u.uid, e.seq, e.time, e.type, e.message FROM unnest($1::bytea[]) AS u(uid)
		CROSS JOIN LATERAL (SELECT seq, time, type, message FROM events WHERE events.uid = u.uid ORDER BY seq DESC LIMIT 1) e`,
		binaryResults, keys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := map[[16]byte][]store.Event{}
	var shared intern.Table
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) != 5 || len(raw[0]) != 16 {
			return nil, fmt.Errorf("event row with a %d-byte uid", len(raw[0]))
		}
		events[[16]byte(raw[0])] = []store.Event{{Seq: uint64(int8Value(raw[1])), Time: time.Unix(0, int8Value(raw[2])).UTC(),
			Type: shared.Bytes(raw[3]), Message: string(raw[4])}}
	}
	return events, rows.Err()
}

// binaryResults asks for every column in binary format, which RawValues
// then holds as is: bytea and text as their bytes, int8 as 8 bytes big-endian.
var binaryResults = pgx.QueryResultFormats{pgx.BinaryFormatCode}

func int8Value(b []byte) int64 {
	if len(b) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}
