package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/myriarch/myriarch/server/store"
)

// A database a newer myriarchd migrated is refused, naming both versions.
func TestSchemaNewerThanBinaryRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.db.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(ctx, dir)
	var tooNew *store.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Found != SchemaVersion()+1 || tooNew.Known != SchemaVersion() {
		t.Fatalf("err = %v, want a SchemaTooNewError", err)
	}
}

// Version 3 moves the offers engine's records out of the collectors' rows
// into their own table, leaving the updaters' rows (providers snapshots)
// as they were.
func TestMigrationMovesOfferRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "myriarch.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:2] {
		if _, err := raw.ExecContext(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{`PRAGMA user_version = 2`,
		`INSERT INTO agents VALUES (X'01000000000000000000000000000000', 'token', 't', 'collector', X'', 0, X'', '{}', 0, 0, CAST('{"state":"offered"}' AS BLOB))`,
		`INSERT INTO agents VALUES (X'02000000000000000000000000000000', 'token', 't', 'updater', X'', 0, X'', '{}', 0, 0, CAST('{"context":{}}' AS BLOB))`,
		`INSERT INTO agents VALUES (X'03000000000000000000000000000000', 'token', 't', 'collector', X'', 0, X'', '{}', 0, 0, X'')`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	raw.Close()
	db, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
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
