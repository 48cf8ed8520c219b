package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/server/store"
)

const insertAudit = `INSERT INTO audit(` + store.AuditColumns + `) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)`

// auditWriter runs fn in a transaction holding the audit lock: every
// instance on the database appends to one chain, one record after the
// other. Each statement after the lock sees what the previous holder
// committed: the transaction is read committed (whatever the database's
// default), where a statement's snapshot is taken when it starts. The
// primary key on the id backs this up: a record that followed a stale
// head would collide with the one that did not.
func (d *DB) auditWriter(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET TRANSACTION ISOLATION LEVEL READ COMMITTED`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockAudit); err != nil {
			return fmt.Errorf("audit lock: %w", err)
		}
		return fn(tx)
	})
}

// AppendAudit appends the records seals make under the audit lock.
func (d *DB) AppendAudit(ctx context.Context, seals ...store.AuditSeal) ([]store.AuditRecord, error) {
	var out []store.AuditRecord
	err := d.auditWriter(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = sealAll(ctx, tx, seals)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append audit records: %w", err)
	}
	return out, nil
}

// sealAll reads the head, has each seal make the record following the
// one before, and inserts them in one round trip.
func sealAll(ctx context.Context, tx pgx.Tx, seals []store.AuditSeal) ([]store.AuditRecord, error) {
	recs, err := store.SealAudit(ctx, func(ctx context.Context) (store.AuditHead, error) { return auditHead(ctx, tx) }, seals)
	if err != nil {
		return nil, err
	}
	var b pgx.Batch
	for _, r := range recs {
		b.Queue(insertAudit, store.AuditArgs(r)...)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, err
	}
	return recs, nil
}

// auditHead is the last record's id and hash, else the anchor.
func auditHead(ctx context.Context, tx pgx.Tx) (store.AuditHead, error) {
	var h store.AuditHead
	err := tx.QueryRow(ctx, `SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1`).Scan(&h.ID, &h.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return auditAnchor(ctx, tx)
	}
	return h, err
}

// auditAnchor is the anchor of the last cut (0 and the genesis hash when none).
func auditAnchor(ctx context.Context, tx pgx.Tx) (store.AuditHead, error) {
	var h store.AuditHead
	err := tx.QueryRow(ctx, `SELECT up_to, hash FROM audit_anchor WHERE one = 1`).Scan(&h.ID, &h.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.AuditHead{Hash: store.AuditGenesis}, nil
	}
	return h, err
}

// ListAudit answers one page of the listing, by the index of its filter.
func (d *DB) ListAudit(ctx context.Context, q store.AuditQuery) ([]store.AuditRecord, error) {
	query, args := store.AuditListSQL(q, pgArg)
	rows, err := d.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit records: %w", err)
	}
	defer rows.Close()
	return store.ScanAuditRecords(rows)
}

// ReadAudit reads the anchor and a batch of records from one snapshot.
func (d *DB) ReadAudit(ctx context.Context, after int64, limit int) (store.AuditHead, []store.AuditRecord, error) {
	var anchor store.AuditHead
	var recs []store.AuditRecord
	err := pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if anchor, err = auditAnchor(ctx, tx); err != nil {
			return fmt.Errorf("read the audit anchor: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT `+store.AuditColumns+` FROM audit WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
		if err != nil {
			return fmt.Errorf("read audit records after %d: %w", after, err)
		}
		defer rows.Close()
		recs, err = store.ScanAuditRecords(rows)
		return err
	})
	return anchor, recs, err
}

// CutAudit removes the oldest records older than before, up to max, in a
// transaction under the audit lock that also moves the anchor and
// appends the cut's record.
func (d *DB) CutAudit(ctx context.Context, before time.Time, max int, seal func(store.AuditCut) store.AuditSeal) (store.AuditCut, error) {
	var cut store.AuditCut
	err := d.auditWriter(ctx, func(tx pgx.Tx) error {
		var err error
		if cut, err = oldPrefix(ctx, tx, before, max); err != nil || cut.Records == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audit_anchor(one, up_to, hash) VALUES(1, $1, $2)
			ON CONFLICT (one) DO UPDATE SET up_to = excluded.up_to, hash = excluded.hash`, cut.UpTo, cut.Hash); err != nil {
			return fmt.Errorf("move the anchor to %d: %w", cut.UpTo, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM audit WHERE id <= $1`, cut.UpTo); err != nil {
			return fmt.Errorf("remove records up to %d: %w", cut.UpTo, err)
		}
		_, err = sealAll(ctx, tx, []store.AuditSeal{seal(cut)})
		return err
	})
	if err != nil {
		return store.AuditCut{}, fmt.Errorf("cut the audit trail: %w", err)
	}
	return cut, nil
}

// oldPrefix finds the oldest records, up to max, that are all older than
// before: their number, and the id and hash of the last of them.
func oldPrefix(ctx context.Context, tx pgx.Tx, before time.Time, max int) (store.AuditCut, error) {
	rows, err := tx.Query(ctx, `SELECT id, time, hash FROM audit ORDER BY id LIMIT $1`, max)
	if err != nil {
		return store.AuditCut{}, err
	}
	defer rows.Close()
	var cut store.AuditCut
	for rows.Next() {
		var id, ts int64
		var hash string
		if err := rows.Scan(&id, &ts, &hash); err != nil {
			return store.AuditCut{}, err
		}
		if ts >= before.UnixNano() {
			break
		}
		cut = store.AuditCut{Records: cut.Records + 1, UpTo: id, Hash: hash}
	}
	rows.Close()
	return cut, rows.Err()
}
