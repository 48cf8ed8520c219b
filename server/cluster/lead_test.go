package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// leadSource reads from a real store what taking the lead reads.
type leadSource struct {
	Source // only the reads below are used
	db     *sqlite.DB
}

func (s leadSource) LoadAgents(ctx context.Context, keep int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	return s.db.LoadAgents(ctx, keep)
}

func (s leadSource) LoadReports(ctx context.Context, uids [][16]byte) ([]store.Report, error) {
	return s.db.LoadReports(ctx, uids)
}

func (s leadSource) RelayedAgents(context.Context) ([][16]byte, error) { return nil, nil }

// decider records the reports it is given.
type decider struct{ reports []store.Report }

func (d *decider) Lead(context.Context) error            { return nil }
func (d *decider) Follow()                               {}
func (d *decider) ApplyReports(reps []store.Report)      { d.reports = append(d.reports, reps...) }
func (d *decider) ReloadState(ctx context.Context) error { return nil }

// A report an agent made to this instance while it followed, still in the
// instance's write-behind when it takes the lead, reaches its deciders:
// its notification went to the other instances only.
func TestTakingTheLeadActsOnReportsNotYetWritten(t *testing.T) {
	here, db := openRegistry(t) // write-behind every hour: nothing written by itself
	d := &decider{}
	s := NewSync(leadSource{db: db}, here, nil, nil, SyncOptions{Lease: time.Minute, Deciders: []Decider{d}})
	upd := uuid.New()
	here.SetReport(upd, "packages", time.Now(), []byte("installed"))
	if err := s.lead(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(d.reports) != 1 || d.reports[0].UID != upd || string(d.reports[0].Data) != "installed" {
		t.Fatalf("the deciders were given %+v, want the report made while following", d.reports)
	}
}
