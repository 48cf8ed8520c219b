package postgres

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
	"github.com/myriarch/myriarch/server/store/storetest"
)

// TestMain fails the package when a test leaves a goroutine running (a
// pool not closed), and stops the private PostgreSQL the tests started.
func TestMain(m *testing.M) { os.Exit(testenv.MainWithPostgres(m)) }

func open(t *testing.T, dsn string) *DB {
	t.Helper()
	db, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func(t *testing.T) store.Store {
		dsn := testenv.Postgres(t)
		return func(t *testing.T) store.Store { return open(t, dsn) }
	})
}

// Both stores have the same schema versions: a migration added to one
// must be added to the other.
func TestSchemaVersionsMatchSQLite(t *testing.T) {
	if SchemaVersion() != sqlite.SchemaVersion() {
		t.Fatalf("PostgreSQL schema version %d, SQLite %d", SchemaVersion(), sqlite.SchemaVersion())
	}
}

// Instances starting together on an empty database migrate it once.
func TestConcurrentStartsMigrateOnce(t *testing.T) {
	dsn := testenv.Postgres(t)
	const n = 6
	dbs := make([]*DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dbs[i], errs[i] = Open(context.Background(), dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	var version, rows int
	if err := dbs[0].pool.QueryRow(context.Background(), `SELECT max(version), count(*) FROM myriarch_schema`).Scan(&version, &rows); err != nil {
		t.Fatal(err)
	}
	if version != SchemaVersion() || rows != 1 {
		t.Fatalf("schema version %d in %d rows, want %d in 1", version, rows, SchemaVersion())
	}
}

// A database a newer myriarchd migrated is refused, naming both versions.
func TestSchemaNewerThanBinaryRefused(t *testing.T) {
	dsn := testenv.Postgres(t)
	db := open(t, dsn)
	if _, err := db.pool.Exec(context.Background(), `UPDATE myriarch_schema SET version = $1`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(context.Background(), dsn)
	var tooNew *store.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Found != SchemaVersion()+1 || tooNew.Known != SchemaVersion() {
		t.Fatalf("err = %v, want a SchemaTooNewError", err)
	}
	if !Permanent(err) {
		t.Fatalf("%v is not permanent", err)
	}
	if !strings.Contains(err.Error(), "newer than this myriarchd") {
		t.Fatalf("message %q does not say what is wrong", err)
	}
}

// Errors of Open: what retrying cannot fix is permanent, an unreachable
// server is not, and no message shows the password.
func TestOpenErrors(t *testing.T) {
	dsn := testenv.Postgres(t)
	missingDB := strings.Replace(dsn, "/myriarch_test_", "/no_such_db_", 1)
	cases := []struct {
		name, dsn string
		permanent bool
		want      string
	}{
		{"not a URL", "host=/tmp dbname=x", true, "not a postgres:// URL"},
		{"malformed", "postgres://u:secretpw@host:notaport/db", true, "cannot parse"},
		{"bad option", "postgres://u:secretpw@/db?connect_timeout=soon", true, "connect_timeout"},
		{"missing database", missingDB, true, "no_such_db_"},
		{"unknown user", strings.Replace(dsn, "postgres://myriarch@", "postgres://intruder:secretpw@", 1), true, "intruder"},
		{"nobody listening", "postgres://u:secretpw@127.0.0.1:1/db?connect_timeout=2", false, "127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open(context.Background(), c.dsn)
			if err == nil {
				db.Close()
				t.Fatal("opened")
			}
			if Permanent(err) != c.permanent {
				t.Errorf("Permanent(%v) = %v, want %v", err, !c.permanent, c.permanent)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
			if strings.Contains(err.Error(), "secretpw") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=require": "postgres://u:xxxxx@h:5432/db?sslmode=require",
		"postgres://u@h/db?password=pw":             "postgres://u@h/db?password=xxxxx",
		"postgresql:///db?host=/run/postgresql":     "postgresql:///db?host=/run/postgresql",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// Version 3 moves the offers engine's records out of the collectors' rows
// into their own table, leaving the updaters' rows (providers snapshots)
// as they were.
func TestMigrationMovesOfferRecords(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.Postgres(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	qs := append(append([]string{}, migrations[:2]...), `CREATE TABLE myriarch_schema (version INT NOT NULL)`, `INSERT INTO myriarch_schema VALUES (2)`,
		`INSERT INTO agents VALUES ('\x01000000000000000000000000000000', 'token', 't', 'collector', '', 0, '', '{}', 0, 0, '{"state":"offered"}')`,
		`INSERT INTO agents VALUES ('\x02000000000000000000000000000000', 'token', 't', 'updater', '', 0, '', '{}', 0, 0, '{"context":{}}')`,
		`INSERT INTO agents VALUES ('\x03000000000000000000000000000000', 'token', 't', 'collector', '', 0, '', '{}', 0, 0, '')`)
	for _, q := range qs {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	conn.Close(ctx)
	db := open(t, dsn)
	defer db.Close()
	offers, err := db.LoadOffers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) != 1 || string(offers[[16]byte{1}]) != `{"state":"offered"}` {
		t.Fatalf("offer records after the migration: %q", offers)
	}
	agents, _, err := db.LoadAgents(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		want := ""
		if a.Kind == "updater" {
			want = `{"context":{}}`
		}
		if string(a.Extra) != want {
			t.Errorf("%s %x extra %q, want %q", a.Kind, a.UID[0], a.Extra, want)
		}
	}
}
