package audit_test

import (
	"context"
	"testing"

	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/store"
)

// A cut with nothing older cuts nothing and records nothing; a cut's
// record is the server's, via estate, on target audit.
func TestCutRecord(t *testing.T) {
	st, _ := backends[0].open(t)
	clk := newClock()
	tr := audit.New(audit.Options{Store: st, Now: clk.Now})
	recs := appendN(t, tr, 0, 3)
	if c, err := tr.Cut(ctx, recs[0].Time); err != nil || c != (audit.Cuts{}) {
		t.Fatalf("cut before the oldest: %+v %v", c, err)
	}
	if c, err := tr.Cut(ctx, recs[2].Time); err != nil || c != (audit.Cuts{Cuts: 1, Records: 2, UpTo: 2}) {
		t.Fatalf("cut before the third: %+v %v", c, err)
	}
	p, err := tr.List(ctx, audit.Query{})
	if err != nil || len(p.Records) != 2 {
		t.Fatalf("%+v %v", p, err)
	}
	r := p.Records[0]
	if r.ID != 4 || r.Actor != audit.CutActor || r.Via != "estate" || r.Action != audit.ActionCut || r.Target != "audit" ||
		r.Outcome != "ok" || r.Detail != "cut 2 records up to id 2; last cut hash "+recs[1].Hash {
		t.Fatalf("the cut's record: %+v", r)
	}
}

// cutMidway is a store that has the trail cut once, right before the
// second read of a verification.
type cutMidway struct {
	store.Audit
	reads int
	cut   func()
}

func (c *cutMidway) ReadAudit(ctx context.Context, after int64, limit int) (store.AuditHead, []store.AuditRecord, error) {
	if c.reads++; c.reads == 2 {
		c.cut()
	}
	return c.Audit.ReadAudit(ctx, after, limit)
}

// A cut while verification reads makes it start again from the new
// anchor: the trail is still proven.
func TestVerifyDuringACut(t *testing.T) {
	st, _ := backends[0].open(t)
	clk := newClock()
	mid := &cutMidway{Audit: st}
	tr := audit.New(audit.Options{Store: mid, Now: clk.Now})
	tr.SetVerifyBatch(3)
	recs := appendN(t, tr, 0, 10)
	mid.cut = func() {
		if _, err := tr.Cut(ctx, recs[4].Time); err != nil {
			t.Error(err)
		}
	}
	// Records 1 to 4 cut after the first batch (1 to 3): 5 to 10 and the cut's record are left.
	if v := verify(t, tr); v != (audit.Verification{OK: true, Records: 7}) || mid.reads < 4 {
		t.Fatalf("%+v after %d reads", v, mid.reads)
	}
}
