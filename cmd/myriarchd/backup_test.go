package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/backup"
	"github.com/myriarch/myriarch/server/servertest"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// backupFixture gives a running server an enrollment token, a user and a
// registered collector, and returns what a restore must bring back.
type backupFixture struct {
	token     string
	collector uuid.UUID
}

func seed(t *testing.T, srv *server.Server, dataDir string) backupFixture {
	t.Helper()
	conn := []string{"--admin", "http://" + srv.AdminAddr().String(), "--data-dir", dataDir}
	code, out, errs := runCLI(append([]string{"token", "create", "--name", "edge", "-o", "json"}, conn...)...)
	if code != 0 {
		t.Fatalf("token create: %d %s %s", code, out, errs)
	}
	var created struct{ ID, Token string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Token == "" {
		t.Fatalf("token create printed %q: %v", out, err)
	}
	col := uuid.Must(uuid.NewV7())
	a := servertest.Start(t, servertest.Spec{OpAMPURL: srv.OpAMPURL(), Token: created.Token, UID: col,
		Identifying: servertest.CollectorIdentity(col, "0.149.0")})
	testkit.WaitFor(t, "the collector stored", func() bool {
		agents, _, err := srv.Store().LoadAgents(context.Background(), 0)
		return err == nil && len(agents) == 1
	})
	a.Stop()
	return backupFixture{token: created.ID, collector: col}
}

// check starts a server on a restored store and finds the fixture there,
// with the audit chain whole.
func (f backupFixture) check(t *testing.T, o server.Options) {
	t.Helper()
	srv := servertest.StartServer(t, o)
	ctx := context.Background()
	tokens, err := srv.Store().ListTokens(ctx)
	if err != nil || len(tokens) != 1 || tokens[0].ID != f.token {
		t.Fatalf("restored tokens %+v, %v", tokens, err)
	}
	if _, ok := srv.Registry().Get(f.collector); !ok {
		t.Fatalf("the collector %s is not in the restored store", f.collector)
	}
	v, err := srv.Audit().Verify(ctx)
	if err != nil || !v.OK || v.Records < 2 {
		t.Fatalf("restored audit trail: %+v, %v", v, err)
	}
	p, err := srv.Audit().List(ctx, audit.Query{Limit: 10})
	if err != nil || !slicesHas(p.Records, "backup.create") {
		t.Fatalf("the backup's own record is not in it: %+v %v", p.Records, err)
	}
}

func slicesHas(recs []audit.Record, action string) bool {
	for _, r := range recs {
		if r.Action == action {
			return true
		}
	}
	return false
}

// A backup of a running SQLite server restores into an empty data
// directory and a server started on it has its tokens, agents and a whole
// audit trail; an existing file needs --force; a second restore, a
// corrupt archive and one of a newer schema are refused and write nothing.
func TestBackupAndRestoreSQLite(t *testing.T) {
	src := t.TempDir()
	srv := servertest.StartServer(t, server.Options{DataDir: src})
	f := seed(t, srv, src)
	archive := filepath.Join(t.TempDir(), "b.tar.gz")
	conn := []string{"--admin", "http://" + srv.AdminAddr().String(), "--data-dir", src}
	code, out, errs := runCLI(append([]string{"backup", "--out", archive}, conn...)...)
	if code != 0 || !strings.Contains(out, "sqlite store, schema") {
		t.Fatalf("backup: %d %q %q", code, out, errs)
	}
	if code, _, errs := runCLI(append([]string{"backup", "--out", archive}, conn...)...); code != 1 || !strings.Contains(errs, "exists; --force replaces it") {
		t.Fatalf("backup over a file: %d %q", code, errs)
	}
	if code, _, errs := runCLI(append([]string{"backup", "--out", archive, "--force"}, conn...)...); code != 0 {
		t.Fatalf("backup --force: %d %q", code, errs)
	}

	dst := filepath.Join(t.TempDir(), "restored")
	if code, out, errs := runCLI("restore", archive, "--data-dir", dst); code != 0 || !strings.Contains(out, "restored") {
		t.Fatalf("restore: %d %q %q", code, out, errs)
	}
	if code, _, errs := runCLI("restore", archive, "--data-dir", dst); code != 1 || !strings.Contains(errs, "not empty") {
		t.Fatalf("a restore into a store with data: %d %q", code, errs)
	}
	f.check(t, server.Options{DataDir: dst})

	// Bad archives: nothing is written.
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), data...)
	corrupt[len(corrupt)/2] ^= 0xff
	newer := rewriteManifest(t, archive, func(m *backup.Manifest) { m.SchemaVersion += 100 })
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"corrupt", "", corrupt},
		{"truncated", "", data[:len(data)/2]},
		{"newer schema", "is newer than this myriarchd", newer},
		{"not an archive", "not a usable myriarchd backup", []byte("hello")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.tar.gz")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(t.TempDir(), "d")
			code, _, errs := runCLI("restore", path, "--data-dir", target)
			if code != 1 || !strings.Contains(errs, tc.want) {
				t.Fatalf("restore: %d %q, want %q", code, errs, tc.want)
			}
			if _, err := os.Stat(filepath.Join(target, "myriarch.db")); err == nil {
				t.Fatal("a refused restore wrote a database")
			}
		})
	}
	for _, bad := range [][]string{{"restore"}, {"restore", archive}, {"restore", archive, "--data-dir", dst, "--store", "postgres://x"}, {"backup"}} {
		if code, _, _ := runCLI(bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", bad, code)
		}
	}
}

// rewriteManifest returns the archive at path with its manifest changed.
func rewriteManifest(t *testing.T, path string, change func(*backup.Manifest)) []byte {
	t.Helper()
	dir := t.TempDir()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	m, err := backup.Read(in, dir)
	if err != nil {
		t.Fatal(err)
	}
	change(&m)
	var out bytes.Buffer
	if err := backup.Write(&out, dir, m); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// The same with PostgreSQL: a repeatable-read copy while the server runs,
// restored into a new database.
func TestBackupAndRestorePostgres(t *testing.T) {
	pg := testenv.StartCluster(t)
	src := t.TempDir()
	srv := servertest.StartServer(t, server.Options{DataDir: src, Store: pg.DSN("postgres")})
	f := seed(t, srv, src)
	archive := filepath.Join(t.TempDir(), "b.tar.gz")
	code, out, errs := runCLI("backup", "--out", archive, "--admin", "http://"+srv.AdminAddr().String(), "--data-dir", src)
	if code != 0 || !strings.Contains(out, "postgres store, schema") {
		t.Fatalf("backup: %d %q %q", code, out, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE restored`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if code, out, errs := runCLI("restore", archive, "--store", pg.DSN("restored")); code != 0 {
		t.Fatalf("restore: %d %q %q", code, out, errs)
	}
	if code, _, errs := runCLI("restore", archive, "--store", pg.DSN("postgres")); code != 1 || !strings.Contains(errs, "not empty") {
		t.Fatalf("a restore into the live database: %d %q", code, errs)
	}
	if code, _, errs := runCLI("restore", archive, "--data-dir", t.TempDir()); code != 1 || !strings.Contains(errs, "holds a postgres store") {
		t.Fatalf("a PostgreSQL archive into SQLite: %d %q", code, errs)
	}
	f.check(t, server.Options{DataDir: t.TempDir(), Store: pg.DSN("restored")})
}
