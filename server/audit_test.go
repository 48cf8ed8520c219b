package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// A server opens the audit trail of its store and serves its routes;
// with --audit-retention it cuts the records older than that at start
// (hourly afterwards), and Close ends the retention's goroutine.
func TestAuditTrailAndRetention(t *testing.T) {
	before := goleak.IgnoreCurrent()
	dir := t.TempDir()
	db, err := sqlite.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	old := func() time.Time { return time.Now().Add(-48 * time.Hour) }
	tr := audit.New(audit.Options{Store: db, Now: old})
	for _, action := range []string{"token.create", "token.revoke"} {
		if _, err := tr.Append(context.Background(), audit.Record{Actor: "alice", Role: "admin", Via: "cli", Action: action, Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	ts := startServer(t, func(o *server.Options) { o.DataDir, o.AuditRetention = dir, 24*time.Hour })
	var page struct {
		Records []audit.Record `json:"records"`
	}
	testkit.WaitFor(t, "the cut at start", func() bool {
		code, body := ts.api("GET", "/api/v1/audit", nil)
		return code == 200 && json.Unmarshal(body, &page) == nil && len(page.Records) == 1 && page.Records[0].Action == audit.ActionCut
	})
	if !strings.HasPrefix(page.Records[0].Detail, "cut 2 records up to id 2;") {
		t.Fatalf("the cut's record: %+v", page.Records[0])
	}
	if _, err := ts.Audit().Append(context.Background(), audit.Record{Actor: "bob", Via: "api", Action: "fleet.pause", Outcome: "denied"}); err != nil {
		t.Fatal(err)
	}
	code, body := ts.api("GET", "/api/v1/audit/verify", nil)
	var v audit.Verification
	if err := json.Unmarshal(body, &v); code != 200 || err != nil || v != (audit.Verification{OK: true, Records: 2}) {
		t.Fatalf("verify: %d %s", code, body)
	}
	ts.stop()
	goleak.VerifyNone(t, before)
}

func TestAuditRetentionNotNegative(t *testing.T) {
	_, err := server.New(context.Background(), server.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		AuditRetention: -time.Hour})
	if err == nil || !strings.Contains(err.Error(), "--audit-retention must not be negative, got -1h0m0s") {
		t.Fatalf("err = %v", err)
	}
}
