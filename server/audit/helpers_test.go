package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/postgres"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

var ctx = context.Background()

// raw is a database reached around the store, as someone with the
// database's rights would: to change what the store would not.
type raw struct {
	t *testing.T
	// exec runs one statement; mark is the n-th placeholder.
	exec func(query string, args ...any) error
	mark func(n int) string
	// unguard drops the triggers that keep the records append-only.
	unguard []string
}

func (r *raw) run(query string, args ...any) {
	r.t.Helper()
	if err := r.exec(query, args...); err != nil {
		r.t.Fatalf("%s: %v", query, err)
	}
}

// backend opens a new, empty store, and the same database raw.
type backend struct {
	name string
	open func(t *testing.T) (store.Store, *raw)
}

var backends = []backend{
	{"sqlite", func(t *testing.T) (store.Store, *raw) {
		dir := t.TempDir()
		db, err := sqlite.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		conn, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "myriarch.db")+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return db, &raw{t: t,
			exec:    func(q string, args ...any) error { _, err := conn.ExecContext(ctx, q, args...); return err },
			mark:    func(n int) string { return "?" + strconv.Itoa(n) },
			unguard: []string{`DROP TRIGGER audit_never_changed`, `DROP TRIGGER audit_cut_only`}}
	}},
	{"postgres", func(t *testing.T) (store.Store, *raw) {
		dsn := testenv.Postgres(t)
		db, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		return db, &raw{t: t,
			exec:    func(q string, args ...any) error { _, err := conn.Exec(ctx, q, args...); return err },
			mark:    func(n int) string { return "$" + strconv.Itoa(n) },
			unguard: []string{`ALTER TABLE audit DISABLE TRIGGER USER`}}
	}},
}

// insert writes r as a row, as the store would.
func (r *raw) insert(rec audit.Record) {
	r.t.Helper()
	q := `INSERT INTO audit(` + store.AuditColumns + `) VALUES(`
	for i := 1; i <= 13; i++ {
		if i > 1 {
			q += ","
		}
		q += r.mark(i)
	}
	r.run(q+`)`, rec.ID, rec.Time.UnixNano(), rec.Actor, rec.Role, rec.Via, rec.Action, rec.Target, rec.Source, rec.RequestID,
		rec.Outcome, rec.Detail, rec.Prev, rec.Hash)
}

// clock is a fake clock: each reading is a second after the one before.
type clock struct {
	mu  sync.Mutex
	now time.Time // guarded by mu
}

func newClock() *clock { return &clock{now: time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

// Set moves the clock to t (the next reading is a second later).
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// sample is record i of a test: every field set, strings that need escaping.
func sample(i int) audit.Record {
	return audit.Record{Actor: fmt.Sprintf("user-%d", i%3), Role: "operator", Via: audit.Vias[i%4],
		Action: []string{"token.create", "fleet.pause", "estate.reload"}[i%3], Target: fmt.Sprintf("fleet:edge-%d", i%5),
		Source: "192.0.2.7:51234", RequestID: fmt.Sprintf("req-%04d", i), Outcome: audit.Outcomes[i%3],
		Detail: fmt.Sprintf("step %d: \"quoted\", <b>, naïve\t✓", i)}
}

// appendN appends n samples from a trail and returns them as stored.
func appendN(t *testing.T, tr *audit.Trail, from, n int) []audit.Record {
	t.Helper()
	var out []audit.Record
	for i := from; i < from+n; i++ {
		r, err := tr.Append(ctx, sample(i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func verify(t testing.TB, tr *audit.Trail) audit.Verification {
	t.Helper()
	v, err := tr.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
