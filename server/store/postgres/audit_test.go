package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/store"
)

// plainSeal seals a record with a hash that is only unique (the contract,
// storetest, checks what a store keeps; this checks what it refuses).
func plainSeal(at time.Time) store.AuditSeal {
	return func(h store.AuditHead) (store.AuditRecord, error) {
		return store.AuditRecord{ID: h.ID + 1, Time: at, Action: "test", Prev: h.Hash, Hash: strings.Repeat("a", 63) + string(rune('0'+h.ID%10))}, nil
	}
}

// The database itself keeps the audit trail append-only: a record is
// never changed, removed only up to the anchor of a cut, the anchor only
// moves forward, and neither table is truncated.
func TestAuditAppendOnly(t *testing.T) {
	ctx := context.Background()
	db := open(t, testenv.Postgres(t))
	defer db.Close()
	old := time.Unix(1700000000, 0)
	for range 4 {
		if _, err := db.AppendAudit(ctx, plainSeal(old)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.CutAudit(ctx, old.Add(time.Second), 1, func(store.AuditCut) store.AuditSeal { return plainSeal(old.Add(time.Hour)) }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ stmt, want string }{
		{`UPDATE audit SET actor = 'mallory' WHERE id = 2`, "never changed"},
		{`UPDATE audit SET id = id + 10 WHERE id = 4`, "never changed"},
		{`DELETE FROM audit WHERE id = 3`, "removed only by a cut"},
		{`DELETE FROM audit`, "removed only by a cut"},
		{`TRUNCATE audit`, "never changed"},
		{`UPDATE audit_anchor SET up_to = 0`, "only moves forward"},
		{`DELETE FROM audit_anchor`, "only moves forward"},
		{`TRUNCATE audit_anchor`, "only moves forward"},
	} {
		if _, err := db.pool.Exec(ctx, c.stmt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.stmt, err, c.want)
		}
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM audit WHERE actor = ''`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("%d records unchanged (%v), want the 3 kept and the cut's", n, err)
	}
}
