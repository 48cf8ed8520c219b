package store

import (
	"fmt"
	"strings"
	"time"
)

// What both backends' audit tables share: the columns, in the order they
// are selected, and the listing's query. Times are Unix nanoseconds.

// AuditColumns are the columns of an audit record, in ScanAuditRecords' order.
const AuditColumns = `id, time, actor, role, via, action, target, source, request_id, outcome, detail, prev, hash`

// AuditListSQL is ListAudit's query, with only the conditions q sets (so
// that the planner picks the index of the one filter there is); arg
// writes the n-th placeholder ("?n" or "$n"). Its order is served by the
// indexes (time, id) and (column, time, id) of both backends.
func AuditListSQL(q AuditQuery, arg func(n int) string) (string, []any) {
	var where []string
	var args []any
	// cond adds a condition whose %s are placeholders of vals.
	cond := func(format string, vals ...any) {
		marks := make([]any, len(vals))
		for i, v := range vals {
			args = append(args, v)
			marks[i] = arg(len(args))
		}
		where = append(where, fmt.Sprintf(format, marks...))
	}
	for _, f := range []struct{ col, v string }{{"actor", q.Actor}, {"action", q.Action}, {"target", q.Target}, {"outcome", q.Outcome}} {
		if f.v != "" {
			cond(f.col+" = %s", f.v)
		}
	}
	if !q.Since.IsZero() {
		cond("time >= %s", q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		cond("time < %s", q.Until.UnixNano())
	}
	if q.After != nil {
		cond("(time, id) < (%s, %s)", q.After.Time.UnixNano(), q.After.ID)
	}
	sql := `SELECT ` + AuditColumns + ` FROM audit`
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, ` AND `)
	}
	args = append(args, q.Limit)
	sql += fmt.Sprintf(` ORDER BY time DESC, id DESC LIMIT %s`, arg(len(args)))
	return sql, args
}

// ScanAuditRecords reads rows of AuditColumns.
func ScanAuditRecords(rows Rows) ([]AuditRecord, error) {
	var out []AuditRecord
	for rows.Next() {
		var r AuditRecord
		var ts int64
		if err := rows.Scan(&r.ID, &ts, &r.Actor, &r.Role, &r.Via, &r.Action, &r.Target, &r.Source, &r.RequestID,
			&r.Outcome, &r.Detail, &r.Prev, &r.Hash); err != nil {
			return nil, fmt.Errorf("audit record: %w", err)
		}
		r.Time = time.Unix(0, ts).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// AuditArgs are r's values for an INSERT of AuditColumns.
func AuditArgs(r AuditRecord) []any {
	return []any{r.ID, r.Time.UnixNano(), r.Actor, r.Role, r.Via, r.Action, r.Target, r.Source, r.RequestID,
		r.Outcome, r.Detail, r.Prev, r.Hash}
}
