package sqlite

import (
	"context"
	"errors"
	"fmt"
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
