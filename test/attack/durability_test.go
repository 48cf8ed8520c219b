//go:build linux

package attack

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	_ "modernc.org/sqlite"
)

// TestFirstBindingSurvivesSIGKILL (finding 9): an agent answered as
// registered is there after a SIGKILL right after the answer.
func TestFirstBindingSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	var uids []uuid.UUID
	for range 5 {
		a := mustWS(t, d, secret)
		uid := uuid.New()
		a.register(uid)
		d.kill() // within a millisecond of the answer, well inside the 0.5 s flush interval
		uids = append(uids, uid)
		d.start()
	}
	for _, uid := range uids {
		if _, ok := d.agent(uid.String()); !ok {
			t.Errorf("agent %s answered as registered, gone after SIGKILL", uid)
		}
	}
}

// TestSIGKILLWithAgentsConnected (held): nothing older than the flush
// interval is lost, and the database is intact.
func TestSIGKILLWithAgentsConnected(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	var uids []uuid.UUID
	for range 50 {
		uid := uuid.New()
		mustWS(t, d, secret).register(uid)
		uids = append(uids, uid)
	}
	time.Sleep(1500 * time.Millisecond) // past the flush interval
	d.kill()

	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.dataDir, "myriarch.db"))
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.QueryRowContext(context.Background(), "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after SIGKILL: %q %v", check, err)
	}
	db.Close()

	d.start()
	for _, uid := range uids {
		if _, ok := d.agent(uid.String()); !ok {
			t.Errorf("agent %s lost by a SIGKILL", uid)
		}
	}
}
