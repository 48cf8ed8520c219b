package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Delivery is one webhook body to send, kept until it is delivered or
// given up, so that no notification is lost across a restart or a
// failover between instances.
type Delivery struct {
	ID      string
	Webhook string
	Event   string
	Fleet   string
	Body    []byte
	Created time.Time
	// Attempts counts the attempts started (claimed); NextAt is when the
	// next is due (while one is in flight, when it is taken for lost),
	// zero once the delivery is settled (delivered or given up).
	Attempts  int
	NextAt    time.Time
	Delivered time.Time
	GaveUp    time.Time
	// LastError is why the last attempt failed ("" when it did not).
	LastError string
}

// Settlement is the outcome of one attempt at a delivery: delivered, due
// again at NextAt, or (neither) given up.
type Settlement struct {
	// Attempt is the number of the attempt settled, as its claim made it
	// (the delivery's Attempts after ClaimDelivery).
	Attempt   int
	At        time.Time
	Delivered bool
	Err       string
	NextAt    time.Time
}

// DeliveryQuery selects deliveries to list, newest first: of one webhook
// (or all), only those whose last attempt failed, only those not settled.
type DeliveryQuery struct {
	Webhook string
	Failed  bool
	Pending bool
	Limit   int
}

// DueQuery selects due deliveries: of one webhook ("" any), of none of
// Except, at most Limit (default 100).
type DueQuery struct {
	Now     time.Time
	Webhook string
	Except  []string
	Limit   int
}

// Deliveries keeps the notifications' outbox.
type Deliveries interface {
	// PutDeliveries stores deliveries, due at their NextAt, in one
	// transaction: a new ID is added; one stored and not attempted yet gets
	// the new body and NextAt (a batch that grew); one attempted already
	// is left as it is, and its ID returned in kept.
	PutDeliveries(ctx context.Context, ds []Delivery) (kept []string, err error)
	// DueDeliveries returns the deliveries q selects, due at q.Now, the
	// earliest due first.
	DueDeliveries(ctx context.Context, q DueQuery) ([]Delivery, error)
	// ClaimDelivery starts an attempt at d, as DueDeliveries returned it,
	// when the stored delivery is still as read (the same Attempts and
	// NextAt): it counts the attempt and makes the delivery due again at
	// until, when the attempt is taken for lost (its sender died). false:
	// another sender claimed it, it was settled or it changed since it was
	// read; nothing is changed. Of several instances reading the same due
	// delivery, one claims it: a body is posted once per attempt.
	ClaimDelivery(ctx context.Context, d Delivery, until time.Time) (bool, error)
	// SettleDelivery records the outcome of the claimed attempt
	// s.Attempt; a delivery not stored is ErrNotFound, one already settled
	// or claimed again since (its claim taken for lost) is not changed
	// (ErrConflict).
	SettleDelivery(ctx context.Context, id string, s Settlement) error
	ListDeliveries(ctx context.Context, q DeliveryQuery) ([]Delivery, error)
	// PendingDeliveries counts the deliveries not settled yet.
	PendingDeliveries(ctx context.Context) (int, error)
}

// PendingDeliveriesSQL is PendingDeliveries' query.
const PendingDeliveriesSQL = `SELECT count(*) FROM deliveries WHERE next_at > 0`

// What both backends' deliveries tables share. Times are Unix nanoseconds,
// 0 for none.

// DeliveryColumns are a delivery's columns, in ScanDeliveries' order.
const DeliveryColumns = `id, webhook, event, fleet, body, created_at, attempts, next_at, delivered_at, gave_up_at, last_error`

// DeliveryArgs are d's values for an INSERT of DeliveryColumns.
func DeliveryArgs(d Delivery) []any {
	return []any{d.ID, d.Webhook, d.Event, d.Fleet, d.Body, nanos(d.Created), d.Attempts, nanos(d.NextAt),
		nanos(d.Delivered), nanos(d.GaveUp), d.LastError}
}

// ScanDeliveries reads rows of DeliveryColumns.
func ScanDeliveries(rows Rows) ([]Delivery, error) {
	var out []Delivery
	for rows.Next() {
		var d Delivery
		var created, next, delivered, gaveUp int64
		if err := rows.Scan(&d.ID, &d.Webhook, &d.Event, &d.Fleet, &d.Body, &created, &d.Attempts, &next, &delivered, &gaveUp,
			&d.LastError); err != nil {
			return nil, fmt.Errorf("delivery: %w", err)
		}
		d.Created, d.NextAt, d.Delivered, d.GaveUp = fromNanos(created), fromNanos(next), fromNanos(delivered), fromNanos(gaveUp)
		out = append(out, d)
	}
	return out, rows.Err()
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// PutDeliverySQL is PutDeliveries' statement for one delivery (its
// arguments DeliveryArgs); arg writes the n-th placeholder. It changes no
// row of a delivery attempted already.
func PutDeliverySQL(arg func(n int) string) string {
	ps := make([]string, 11)
	for i := range ps {
		ps[i] = arg(i + 1)
	}
	return `INSERT INTO deliveries(` + DeliveryColumns + `) VALUES(` + strings.Join(ps, ",") + `)` +
		` ON CONFLICT (id) DO UPDATE SET body = excluded.body, next_at = excluded.next_at` +
		` WHERE deliveries.attempts = 0 AND deliveries.next_at > 0`
}

// DueDeliveriesSQL is DueDeliveries' query and its arguments; arg writes
// the n-th placeholder.
func DueDeliveriesSQL(q DueQuery, arg func(n int) string) (string, []any) {
	args := []any{nanos(q.Now)}
	sql := `SELECT ` + DeliveryColumns + ` FROM deliveries WHERE next_at > 0 AND next_at <= ` + arg(1)
	if q.Webhook != "" {
		args = append(args, q.Webhook)
		sql += ` AND webhook = ` + arg(len(args))
	}
	if len(q.Except) > 0 {
		ps := make([]string, len(q.Except))
		for i, w := range q.Except {
			args = append(args, w)
			ps[i] = arg(len(args))
		}
		sql += ` AND webhook NOT IN (` + strings.Join(ps, ",") + `)`
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	args = append(args, limit)
	return sql + ` ORDER BY next_at, id LIMIT ` + arg(len(args)), args
}

// ClaimDeliverySQL is ClaimDelivery's update and its arguments: it
// changes only a delivery pending and unchanged since d was read.
func ClaimDeliverySQL(d Delivery, until time.Time, arg func(n int) string) (string, []any) {
	return `UPDATE deliveries SET attempts = attempts + 1, next_at = ` + arg(1) + ` WHERE id = ` + arg(2) +
			` AND attempts = ` + arg(3) + ` AND next_at = ` + arg(4) + ` AND next_at > 0`,
		[]any{nanos(until), d.ID, d.Attempts, nanos(d.NextAt)}
}

// SettleDeliverySQL is SettleDelivery's update and its arguments: it
// changes only a delivery not yet settled, at the attempt settled.
func SettleDeliverySQL(id string, s Settlement, arg func(n int) string) (string, []any) {
	var next, delivered, gaveUp int64
	switch {
	case s.Delivered:
		delivered = nanos(s.At)
	case s.NextAt.IsZero():
		gaveUp = nanos(s.At)
	default:
		next = nanos(s.NextAt)
	}
	return `UPDATE deliveries SET next_at = ` + arg(1) + `, delivered_at = ` + arg(2) +
			`, gave_up_at = ` + arg(3) + `, last_error = ` + arg(4) + ` WHERE id = ` + arg(5) + ` AND next_at > 0 AND attempts = ` + arg(6),
		[]any{next, delivered, gaveUp, s.Err, id, s.Attempt}
}

// DeliveryListSQL is ListDeliveries' query, newest first.
func DeliveryListSQL(q DeliveryQuery, arg func(n int) string) (string, []any) {
	var where []string
	var args []any
	if q.Webhook != "" {
		args = append(args, q.Webhook)
		where = append(where, "webhook = "+arg(len(args)))
	}
	if q.Failed {
		where = append(where, "last_error <> ''")
	}
	if q.Pending {
		where = append(where, "next_at > 0")
	}
	sql := `SELECT ` + DeliveryColumns + ` FROM deliveries`
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, ` AND `)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	args = append(args, limit)
	return sql + ` ORDER BY created_at DESC, id DESC LIMIT ` + arg(len(args)), args
}
