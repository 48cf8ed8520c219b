package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(MainWithPostgres(m)) }

func TestPostgresGivesAnEmptyDatabase(t *testing.T) {
	dsn := Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	var tables int
	if err := conn.QueryRow(ctx, `SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')`).Scan(&db, &tables); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(db, "myriarch_test_") || tables != 0 {
		t.Fatalf("database %q with %d tables", db, tables)
	}
	if other := Postgres(t); other == dsn {
		t.Fatal("two calls returned the same database")
	}
}

func TestClusterRestartKeepsData(t *testing.T) {
	c := StartCluster(t)
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)`)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, c.DSN("postgres")); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exec(`DO $$ BEGIN IF (SELECT n FROM kept) <> 7 THEN RAISE 'lost'; END IF; END $$`)
	if os.Geteuid() == 0 {
		fi, err := os.Stat(filepath.Join(c.dir, "data"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Sys().(*syscall.Stat_t).Uid == 0 {
			t.Fatal("the cluster's data belongs to root")
		}
	}
}

func TestMissingPostgresFailsWithItsInstallCommand(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(PostgresEnv, "")
	old := debianPostgres
	debianPostgres = t.TempDir()
	defer func() { debianPostgres = old }()
	r := &recorder{TB: t}
	StartCluster(r)
	if r.skipped != "" {
		t.Fatalf("skipped (%s)", r.skipped)
	}
	for _, w := range []string{"apt-get install -y postgresql", SetupCommand, PostgresEnv} {
		if !strings.Contains(r.failed, w) {
			t.Errorf("failure %q lacks %q", r.failed, w)
		}
	}
}
