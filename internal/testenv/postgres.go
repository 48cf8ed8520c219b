package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv names an existing PostgreSQL server (a DSN whose user may
// create databases) that Postgres uses instead of a private cluster.
const PostgresEnv = "MYRIARCH_TEST_POSTGRES"

// postgresPackage is the Debian package of the server binaries, which it
// installs under debianPostgres/<major>/bin.
const postgresPackage = "postgresql"

var debianPostgres = "/usr/lib/postgresql"

var (
	hooked       atomic.Bool
	sharedOnce   sync.Once
	sharedErr    error
	sharedServer *Cluster // guarded by sharedOnce
)

// RunWithPostgres runs a package's tests (call it from TestMain: os.Exit(
// testenv.RunWithPostgres(m))) and afterwards stops the private cluster
// that Postgres started for them, if any, and removes the data directory
// every private cluster of the package was copied from.
func RunWithPostgres(m *testing.M) int {
	hooked.Store(true)
	code := m.Run()
	if sharedServer != nil {
		if err := sharedServer.stopAndRemove(); err != nil {
			fmt.Fprintln(os.Stderr, "testenv: stopping the private PostgreSQL:", err)
		}
	}
	if err := removeTemplate(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: removing the PostgreSQL template data directory:", err)
	}
	return code
}

// Postgres returns the DSN of a new, empty database that is dropped when
// t ends. The database lives on MYRIARCH_TEST_POSTGRES when that is set,
// else on a private cluster started once for the test binary (see
// RunWithPostgres). Missing server binaries fail t.
func Postgres(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		if !hooked.Load() {
			t.Fatalf("testenv.Postgres needs TestMain to call testenv.RunWithPostgres (it stops the private cluster)")
		}
		sharedOnce.Do(func() { sharedServer, sharedErr = startCluster() })
		if sharedErr != nil {
			t.Fatalf("private PostgreSQL: %v", sharedErr)
		}
		admin = sharedServer.DSN("postgres")
	}
	return newDatabase(t, admin)
}

// Cluster is a private PostgreSQL server: a data directory made by initdb
// in a temporary directory, run as an unprivileged user (nobody when the
// tests run as root), reached over a Unix socket in that directory only.
type Cluster struct {
	dir  string // holds data/, the socket and log
	bin  string // directory of initdb and postgres
	proc procAttr

	mu  sync.Mutex
	cmd *exec.Cmd     // guarded by mu; nil when stopped
	out *bytes.Buffer // guarded by mu
}

// StartCluster starts a private cluster for t alone (tests that stop and
// restart PostgreSQL), stopped and removed when t ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := startCluster()
	if err != nil {
		t.Fatalf("private PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := c.stopAndRemove(); err != nil {
			t.Errorf("stopping PostgreSQL: %v", err)
		}
	})
	return c
}

// DSN is the URL of database db on the cluster, as its superuser.
func (c *Cluster) DSN(db string) string {
	return "postgres://myriarch@/" + db + "?host=" + url.QueryEscape(c.dir) + "&sslmode=disable"
}

// SocketPath is the cluster's Unix socket.
func (c *Cluster) SocketPath() string { return filepath.Join(c.dir, ".s.PGSQL.5432") }

// Log is what the server printed so far.
func (c *Cluster) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil {
		return ""
	}
	return c.out.String()
}

// newDatabase creates an empty database on the server that admin (a DSN)
// names and returns a DSN for it; it is dropped when t ends.
func newDatabase(t testing.TB, admin string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "myriarch_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connecting to PostgreSQL (%s): %v", PostgresEnv, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return withDatabase(admin, name)
}

// withDatabase returns dsn naming database db instead of its own.
func withDatabase(dsn, db string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + db
		u.RawPath = ""
		return u.String()
	}
	return strings.TrimSpace(dsn) + " dbname=" + db
}
