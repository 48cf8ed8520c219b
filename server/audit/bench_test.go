package audit_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/postgres"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// Benchmarks of the audit trail. Latencies are reported as percentiles
// of the run's own operations; nothing here asserts a duration.
//
//	go test -run '^$' -bench . -benchtime 2000x ./server/audit/          # appends, lists
//	go test -run '^$' -bench Million -benchtime 1x -timeout 60m ./server/audit/

// percentiles reports the 50th, 95th and 99th percentiles of ds in µs.
func percentiles(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	at := func(p float64) float64 {
		return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.95), "p95-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// benchAppend appends b.N records from goroutines writers, timing each.
func benchAppend(b *testing.B, tr *audit.Trail, writers int) {
	ds := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range writers {
		wg.Go(func() {
			for i := w; i < b.N; i += writers {
				start := time.Now()
				if _, err := tr.Append(ctx, sample(i)); err != nil {
					b.Error(err)
					return
				}
				ds[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	percentiles(b, ds)
}

// BenchmarkAppend is the cost an audited request adds: one Append, from
// one request at a time and from eight at once (sharing transactions), on
// SQLite (the default store) and on PostgreSQL (a private cluster on this
// machine, over its Unix socket).
func BenchmarkAppend(b *testing.B) {
	for _, backend := range []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"sqlite", func(b *testing.B) store.Store {
			db, err := sqlite.Open(ctx, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return db
		}},
		{"postgres", func(b *testing.B) store.Store {
			db, err := postgres.Open(ctx, testenv.Postgres(b))
			if err != nil {
				b.Fatal(err)
			}
			return db
		}},
	} {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/writers=%d", backend.name, writers), func(b *testing.B) {
				db := backend.open(b)
				defer db.Close()
				benchAppend(b, audit.New(audit.Options{Store: db}), writers)
			})
		}
	}
}

// million is a trail of a million records, each sealed after the one
// before, a tenth of a second apart: 50 actors, 20 actions, 10 000
// targets, one record in 50 denied, one in 200 an error.
const million = 1_000_000

var millionStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// millionRecords calls fn with each record of the trail, in id order.
func millionRecords(fn func(r audit.Record) error) error {
	prev := store.AuditGenesis
	for i := 1; i <= million; i++ {
		outcome := audit.OutcomeOK
		switch {
		case i%200 == 0:
			outcome = audit.OutcomeError
		case i%50 == 0:
			outcome = audit.OutcomeDenied
		}
		r := audit.Record{ID: int64(i), Time: millionStart.Add(time.Duration(i) * 100 * time.Millisecond), Actor: fmt.Sprintf("user-%02d", i%50),
			Role: "operator", Via: audit.Vias[i%4], Action: fmt.Sprintf("fleet.action-%02d", i%20), Target: fmt.Sprintf("fleet:edge-%05d", i%10000),
			Source: "192.0.2.7:51234", RequestID: fmt.Sprintf("req-%07d", i), Outcome: outcome,
			Detail: "paused the rollout of fleet edge at wave 3 after 2 failures; resumed by the operator later", Prev: prev}
		r.Hash = r.HashAfter(prev)
		prev = r.Hash
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func rowOf(r audit.Record) []any {
	return []any{r.ID, r.Time.UnixNano(), r.Actor, r.Role, r.Via, r.Action, r.Target, r.Source, r.RequestID, r.Outcome, r.Detail, r.Prev, r.Hash}
}

// millionSQLite is a SQLite store holding the million records, written
// around the store in transactions of 50 000 rows.
func millionSQLite(b *testing.B) store.Store {
	dir := b.TempDir()
	db, err := sqlite.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "myriarch.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	var tx *sql.Tx
	var st *sql.Stmt
	err = millionRecords(func(r audit.Record) error {
		if tx == nil {
			if tx, err = raw.Begin(); err != nil {
				return err
			}
			if st, err = tx.Prepare(`INSERT INTO audit(` + store.AuditColumns + `) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)`); err != nil {
				return err
			}
		}
		if _, err := st.Exec(rowOf(r)...); err != nil {
			return err
		}
		if r.ID%50000 == 0 {
			st.Close()
			err, tx = tx.Commit(), nil
			return err
		}
		return nil
	})
	if err == nil && tx != nil {
		st.Close()
		err = tx.Commit()
	}
	if err != nil {
		b.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	return db
}

// millionRows feeds the million records to COPY.
type millionRows struct {
	ch  chan audit.Record
	cur audit.Record
}

func (m *millionRows) Next() bool {
	r, ok := <-m.ch
	m.cur = r
	return ok
}
func (m *millionRows) Values() ([]any, error) { return rowOf(m.cur), nil }
func (m *millionRows) Err() error             { return nil }

// millionPostgres is a PostgreSQL store holding the million records,
// copied in around the store.
func millionPostgres(b *testing.B) store.Store {
	dsn := testenv.Postgres(b)
	db, err := postgres.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	rows := &millionRows{ch: make(chan audit.Record, 1024)}
	go func() {
		defer close(rows.ch)
		millionRecords(func(r audit.Record) error { rows.ch <- r; return nil })
	}()
	cols := []string{"id", "time", "actor", "role", "via", "action", "target", "source", "request_id", "outcome", "detail", "prev", "hash"}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"audit"}, cols, rows)
	if err != nil || n != million {
		b.Fatalf("copied %d records: %v", n, err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE audit`); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkMillion: with a million records in the store, GET
// /api/v1/audit's first page (100 records) without a filter and with
// each kind of filter, one Append, and Verify of the whole trail (its
// time, and the most heap it held above what was in use before). The
// CPU time is this process's (with PostgreSQL, not the server's); the
// machine is shared, so it moves less than the wall time does.
func BenchmarkMillion(b *testing.B) {
	for _, backend := range []struct {
		name string
		open func(b *testing.B) store.Store
	}{{"sqlite", millionSQLite}, {"postgres", millionPostgres}} {
		b.Run(backend.name, func(b *testing.B) {
			start := time.Now()
			db := backend.open(b)
			b.Logf("%s: a million records written in %s", backend.name, time.Since(start).Round(time.Second))
			tr := audit.New(audit.Options{Store: db})
			api := admin.New(admin.Deps{AdminToken: adminToken})
			tr.Routes(api)
			last := millionStart.Add(million * 100 * time.Millisecond)
			for _, q := range []struct{ name, query string }{
				{"first-page", ""},
				{"actor", "actor=user-07"},
				{"action", "action=fleet.action-03"},
				{"target", "target=fleet:edge-00042"},
				{"outcome-error", "outcome=error"},
				{"since-last-hour", "since=" + last.Add(-time.Hour).Format(time.RFC3339)},
				{"until-first-day", "until=" + millionStart.Add(24*time.Hour).Format(time.RFC3339)},
				{"actor-and-until", "actor=user-07&until=" + millionStart.Add(24*time.Hour).Format(time.RFC3339)},
				{"nothing-matches", "actor=nobody"},
			} {
				b.Run("list/"+q.name, func(b *testing.B) {
					req := httptest.NewRequest(http.MethodGet, "/api/v1/audit?"+q.query, nil)
					req.Header.Set("Authorization", "Bearer "+adminToken)
					rec := httptest.NewRecorder()
					api.ServeHTTP(rec, req)
					var page audit.Page
					if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || (len(page.Records) == 0) != (q.name == "nothing-matches") {
						b.Fatalf("%s: %d records (%v): %.200s", q.query, len(page.Records), err, rec.Body)
					}
					ds := make([]time.Duration, b.N)
					cpu := testenv.ProcessCPU()
					for i := range b.N {
						rec := httptest.NewRecorder()
						start := time.Now()
						api.ServeHTTP(rec, req)
						ds[i] = time.Since(start)
						if rec.Code != http.StatusOK {
							b.Fatalf("%d %s", rec.Code, rec.Body)
						}
					}
					b.ReportMetric(float64((testenv.ProcessCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
					percentiles(b, ds)
				})
			}
			b.Run("append", func(b *testing.B) { benchAppend(b, tr, 1) })
			b.Run("verify", func(b *testing.B) {
				for range b.N {
					cpu := testenv.ProcessCPU()
					peak, v := heapPeak(func() audit.Verification { return verify(b, tr) })
					if !v.OK || v.Records < million {
						b.Fatalf("%+v", v)
					}
					b.ReportMetric(float64((testenv.ProcessCPU() - cpu).Milliseconds()), "cpu-ms/op")
					b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				}
			})
		})
	}
}

// heapPeak runs fn and returns the most heap (live objects) it held at
// once above what was live before, sampled every 5 ms.
func heapPeak[T any](fn func() T) (uint64, T) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	out := fn()
	close(done)
	wg.Wait()
	return peak - min(peak, base), out
}

// BenchmarkHashAfter is what verification spends per record besides
// reading it: the canonical JSON and its hash.
func BenchmarkHashAfter(b *testing.B) {
	r := sample(7)
	r.ID, r.Time = 123456, millionStart
	b.ReportAllocs()
	for b.Loop() {
		r.HashAfter(store.AuditGenesis)
	}
}
