package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/server/store"
)

// channel is the PostgreSQL notification channel of myriarchd instances.
const channel = "myriarch_changes"

// Notify implements store.Notifications: one pg_notify per payload, sent
// in one batch.
func (d *DB) Notify(ctx context.Context, payloads []string) error {
	batch := &pgx.Batch{}
	for _, p := range payloads {
		batch.Queue(`SELECT pg_notify($1, $2)`, channel, p)
	}
	return d.pool.SendBatch(ctx, batch).Close()
}

// Listen implements store.Notifications: LISTEN on a connection taken out
// of the pool (LISTEN is that connection's state).
func (d *DB) Listen(ctx context.Context) (store.Subscription, error) {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	conn := c.Hijack()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("listen: %w", err)
	}
	return &subscription{conn: conn}, nil
}

type subscription struct{ conn *pgx.Conn }

var _ store.Subscription = (*subscription)(nil)

func (s *subscription) Next(ctx context.Context) (string, error) {
	msg, err := s.conn.WaitForNotification(ctx)
	if err != nil {
		return "", err
	}
	return msg.Payload, nil
}

func (s *subscription) Close() error { return s.conn.Close(context.Background()) }
