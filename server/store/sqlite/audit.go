package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// querier is what both a connection and a transaction run statements on.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

const insertAudit = `INSERT INTO audit(` + store.AuditColumns + `) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)`

// AppendAudit appends the records seals make in a writer transaction,
// which is also what keeps the chain from forking: they follow the head
// read under the database's write lock.
func (d *DB) AppendAudit(ctx context.Context, seals ...store.AuditSeal) ([]store.AuditRecord, error) {
	var out []store.AuditRecord
	err := d.immediate(ctx, func(c *sql.Conn) error {
		var err error
		out, err = sealAll(ctx, c, seals)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append audit records: %w", err)
	}
	return out, nil
}

// sealAll reads the head, has each seal make the record following the
// one before, and inserts them.
func sealAll(ctx context.Context, q querier, seals []store.AuditSeal) ([]store.AuditRecord, error) {
	recs, err := store.SealAudit(ctx, func(ctx context.Context) (store.AuditHead, error) { return auditHead(ctx, q) }, seals)
	if err != nil {
		return nil, err
	}
	st, err := q.PrepareContext(ctx, insertAudit)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for _, r := range recs {
		if _, err := st.ExecContext(ctx, store.AuditArgs(r)...); err != nil {
			return nil, fmt.Errorf("record %d: %w", r.ID, err)
		}
	}
	return recs, nil
}

// auditHead is the last record's id and hash, else the anchor.
func auditHead(ctx context.Context, q querier) (store.AuditHead, error) {
	var h store.AuditHead
	err := q.QueryRowContext(ctx, `SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1`).Scan(&h.ID, &h.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return auditAnchor(ctx, q)
	}
	return h, err
}

// auditAnchor is the anchor of the last cut (0 and the genesis hash when none).
func auditAnchor(ctx context.Context, q querier) (store.AuditHead, error) {
	var h store.AuditHead
	err := q.QueryRowContext(ctx, `SELECT up_to, hash FROM audit_anchor WHERE one = 1`).Scan(&h.ID, &h.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return store.AuditHead{Hash: store.AuditGenesis}, nil
	}
	return h, err
}

// ListAudit answers one page of the listing, by the index of its filter.
func (d *DB) ListAudit(ctx context.Context, q store.AuditQuery) ([]store.AuditRecord, error) {
	query, args := store.AuditListSQL(q, sqliteArg)
	rows, err := d.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit records: %w", err)
	}
	defer rows.Close()
	return store.ScanAuditRecords(rows)
}

// ReadAudit reads the anchor and a batch of records in one transaction.
func (d *DB) ReadAudit(ctx context.Context, after int64, limit int) (store.AuditHead, []store.AuditRecord, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return store.AuditHead{}, nil, err
	}
	defer tx.Rollback()
	anchor, err := auditAnchor(ctx, tx)
	if err != nil {
		return store.AuditHead{}, nil, fmt.Errorf("read the audit anchor: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+store.AuditColumns+` FROM audit WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
	if err != nil {
		return store.AuditHead{}, nil, fmt.Errorf("read audit records after %d: %w", after, err)
	}
	defer rows.Close()
	recs, err := store.ScanAuditRecords(rows)
	if err != nil {
		return store.AuditHead{}, nil, err
	}
	return anchor, recs, tx.Commit()
}

// CutAudit removes the oldest records older than before, up to max, in a
// writer transaction that also moves the anchor and appends the cut's record.
func (d *DB) CutAudit(ctx context.Context, before time.Time, max int, seal func(store.AuditCut) store.AuditSeal) (store.AuditCut, error) {
	var cut store.AuditCut
	err := d.immediate(ctx, func(c *sql.Conn) error {
		var err error
		if cut, err = oldPrefix(ctx, c, before, max); err != nil || cut.Records == 0 {
			return err
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO audit_anchor(one, up_to, hash) VALUES(1, ?, ?)
			ON CONFLICT(one) DO UPDATE SET up_to = excluded.up_to, hash = excluded.hash`, cut.UpTo, cut.Hash); err != nil {
			return fmt.Errorf("move the anchor to %d: %w", cut.UpTo, err)
		}
		if _, err := c.ExecContext(ctx, `DELETE FROM audit WHERE id <= ?`, cut.UpTo); err != nil {
			return fmt.Errorf("remove records up to %d: %w", cut.UpTo, err)
		}
		_, err = sealAll(ctx, c, []store.AuditSeal{seal(cut)})
		return err
	})
	if err != nil {
		return store.AuditCut{}, fmt.Errorf("cut the audit trail: %w", err)
	}
	return cut, nil
}

// oldPrefix finds the oldest records, up to max, that are all older than
// before: their number, and the id and hash of the last of them.
func oldPrefix(ctx context.Context, q querier, before time.Time, max int) (store.AuditCut, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, time, hash FROM audit ORDER BY id LIMIT ?`, max)
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
	return cut, rows.Err()
}
