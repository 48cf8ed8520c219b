package notify

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// A fleet-wide failure: 10 000 collectors' offers fail within one window.
// One op adds the 10 000 occurrences (fleet found per agent), then runs
// the passes that store the batch as it grows (one a second for a
// minute: 60 rewrites of a body listing 1 000 of them) and the final one,
// on the real SQLite store. Divide ns/op by a minute for the share of one
// core it costs.
func BenchmarkFleetWideFailure(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const agents = 10_000
	fleetOf := make(map[string]string, agents)
	ids := make([]string, agents)
	for i := range ids {
		ids[i] = fmt.Sprintf("0190c0de-0000-7000-8000-%012d", i)
		fleetOf[ids[i]] = "edge"
	}
	t0 := time.Unix(1796636312, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now := t0.Add(time.Duration(i) * time.Hour)
		n := New(Config{Store: db, Window: time.Minute, Poll: time.Second, Now: func() time.Time { return now },
			FleetOf: func(a string) string { return fleetOf[a] }})
		n.SetWebhooks([]estate.Webhook{{Name: "ops", URL: "http://127.0.0.1:1/", Events: []string{estate.EventOfferFailed}}})
		per := agents / 60
		for pass := range 60 {
			for j := pass * per; j < (pass+1)*per; j++ {
				n.Add(Occurrence{Event: estate.EventOfferFailed, Agent: ids[j], Message: "sha256 mismatch: the artifact is not the one in the catalog", Time: now})
			}
			if err := n.gather(ctx, now); err != nil {
				b.Fatal(err)
			}
			now = now.Add(time.Second)
		}
		if err := n.gather(ctx, now.Add(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
}
