package audit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/postgres"
)

// Six instances on one PostgreSQL database (six store handles and
// trails), appending at once from two goroutines each, write one chain:
// ids dense from 1, each prev the hash of the record before. Then, while
// they append more, each of them cuts the trail too: verification still
// proves it, and every record appended is either kept or counted by a cut.
func TestSixInstancesOneChain(t *testing.T) {
	dsn := testenv.Postgres(t)
	const instances, each = 6, 30
	trails := make([]*audit.Trail, instances)
	dbs := make([]*postgres.DB, instances)
	for i := range instances {
		db, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i], trails[i] = db, audit.New(audit.Options{Store: db})
	}
	run := func(fn func(w int) error) {
		t.Helper()
		errs := make([]error, 2*instances)
		var wg sync.WaitGroup
		for w := range 2 * instances {
			wg.Go(func() { errs[w] = fn(w) })
		}
		wg.Wait()
		for w, err := range errs {
			if err != nil {
				t.Fatalf("writer %d: %v", w, err)
			}
		}
	}
	appendEach := func(w int) error {
		for i := range each {
			if _, err := trails[w%instances].Append(ctx, sample(w*100+i)); err != nil {
				return err
			}
		}
		return nil
	}
	run(appendEach)

	const total = 2 * instances * each
	var all []store.AuditRecord
	for after := int64(0); ; {
		anchor, batch, err := dbs[3].ReadAudit(ctx, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		if anchor.ID != 0 {
			t.Fatalf("anchor %+v without a cut", anchor)
		}
		all = append(all, batch...)
		if len(batch) < 100 {
			break
		}
		after = batch[len(batch)-1].ID
	}
	if len(all) != total {
		t.Fatalf("%d records, want %d", len(all), total)
	}
	prev := store.AuditGenesis
	for i, r := range all {
		if r.ID != int64(i+1) || r.Prev != prev {
			t.Fatalf("record %d is id %d with prev %.12s…, want id %d after %.12s…", i+1, r.ID, r.Prev, i+1, prev)
		}
		prev = r.Hash
	}
	if v := verify(t, trails[5]); v != (audit.Verification{OK: true, Records: total}) {
		t.Fatalf("verify: %+v", v)
	}

	// Appends and cuts at once: the writers of even number append, the
	// others cut what is older than now, three times each.
	var mu sync.Mutex
	var cut, cuts int64 // guarded by mu
	run(func(w int) error {
		if w%2 == 0 {
			return appendEach(w)
		}
		for range 3 {
			c, err := trails[w%instances].Cut(ctx, time.Now())
			if err != nil {
				return err
			}
			mu.Lock()
			cut, cuts = cut+c.Records, cuts+int64(c.Cuts)
			mu.Unlock()
		}
		return nil
	})
	v := verify(t, trails[0])
	if !v.OK {
		t.Fatalf("verify after appends and cuts: %+v", v)
	}
	appended := int64(total + instances*each + cuts) // the cuts' records too
	if cut+v.Records != appended || cuts == 0 {
		t.Fatalf("%d records cut by %d cuts and %d kept, %d appended", cut, cuts, v.Records, appended)
	}
}
