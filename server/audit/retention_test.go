package audit_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/audit"
)

// latestCut is the detail of the trail's latest audit.cut record ("" when none).
func latestCut(t *testing.T, tr *audit.Trail) string {
	t.Helper()
	p, err := tr.List(ctx, audit.Query{Action: audit.ActionCut, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) == 0 {
		return ""
	}
	return p.Records[0].Detail
}

// Retention cuts what is older than its keep duration at once when it
// starts, then at every interval; Close ends its goroutine.
func TestRetentionAtStartThenEveryInterval(t *testing.T) {
	st, _ := backends[0].open(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // the store's goroutines end with the test
	clk := newClock()
	tr := audit.New(audit.Options{Store: st, Now: clk.Now})
	start := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	clk.Set(start)
	appendN(t, tr, 0, 5)
	clk.Set(start.Add(10 * time.Hour))

	// An interval no test waits for: only the run at start can cut.
	r := tr.Retain(time.Hour, time.Hour)
	testkit.WaitFor(t, "the cut at start", func() bool { return strings.HasPrefix(latestCut(t, tr), "cut 5 records up to id 5;") })
	r.Close()

	appendN(t, tr, 5, 3)
	clk.Set(start.Add(20 * time.Hour))
	r = tr.Retain(time.Hour, 10*time.Millisecond)
	defer r.Close()
	// The three records and the first cut's record, by a later run.
	testkit.WaitFor(t, "a cut at an interval", func() bool { return strings.HasPrefix(latestCut(t, tr), "cut 4 records up to id 9;") })
	if v := verify(t, tr); !v.OK {
		t.Fatalf("%+v", v)
	}
}
