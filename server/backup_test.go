package server_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/backup"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// A backup taken while agents report and a rollout runs restores into a
// fresh store on which myriarchd starts with every agent, its fleet
// assignment and its offer, every token, and a whole audit trail.
func TestBackupUnderLoad(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.0")
	est.addVersion("0.149.1")
	est.fleet("edge", "0.149.1", "")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil)
	type pair struct {
		col uuid.UUID
		upd *fakeUpdater
	}
	var pairs []pair
	for i := range 6 {
		host := fmt.Sprintf("h%d", i)
		col, _ := ts.startCollector(tok.Token, host, "0.149.0")
		pairs = append(pairs, pair{col, ts.startUpdater(tok.Token, col, host, "binary")})
	}
	for _, p := range pairs {
		ts.waitAgent(p.col, "offered", offerState("offered"))
	}
	// Load: the updaters report their downloads over and over while the
	// backup runs.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, p := range pairs {
		offer := p.upd.waitOffer("the offer", func(*protobufs.PackagesAvailable) bool { return true })
		wg.Go(func() {
			for i := 0; !stop.Load() && i < 10000; i++ {
				st := protobufs.PackageStatusEnum_PackageStatusEnum_Downloading
				if i%2 == 1 {
					st = protobufs.PackageStatusEnum_PackageStatusEnum_Installing
				}
				p.upd.report(offer, pkgName, st, "")
			}
		})
	}
	code, archive := ts.api("POST", "/api/v1/backup", nil)
	stop.Store(true)
	wg.Wait()
	if code != 200 {
		t.Fatalf("backup: %d %s", code, archive)
	}
	dir := t.TempDir()
	m, err := backup.Read(bytes.NewReader(archive), dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.EstateRevision == "" || m.Backend != "sqlite" || m.SchemaVersion != sqlite.SchemaVersion() {
		t.Fatalf("manifest %+v", m)
	}
	restored := t.TempDir()
	if err := sqlite.Restore(context.Background(), restored, dir, m.SnapshotInfo); err != nil {
		t.Fatal(err)
	}
	ts2 := startServer(t, func(o *server.Options) { o.Estate, o.DataDir = est.dir, restored })
	for _, p := range pairs {
		for _, uid := range []uuid.UUID{p.col, p.upd.uid} {
			if _, ok := ts2.agent(uid); !ok {
				t.Fatalf("agent %s not restored", uid)
			}
		}
		a, _ := ts2.agent(p.col)
		off, as := offerOf(a), assignmentOf(t, a)
		if off.State == "" || off.Version != "0.149.1" || as.Fleet == nil || *as.Fleet != "edge" {
			t.Errorf("collector %s restored with offer %+v, fleet %v", p.col, off, as.Fleet)
		}
	}
	if tokens, err := ts2.Store().ListTokens(context.Background()); err != nil || len(tokens) != 1 || tokens[0].ID != tok.ID {
		t.Fatalf("tokens %+v %v", tokens, err)
	}
	v, err := ts2.Audit().Verify(context.Background())
	if err != nil || !v.OK || v.Records < 2 {
		t.Fatalf("audit %+v %v", v, err)
	}
}
