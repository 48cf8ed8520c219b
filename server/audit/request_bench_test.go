package audit_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/audit"
	"github.com/myriarch/myriarch/server/credentials"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// BenchmarkAuditedRequest is what the audit trail adds to a change
// request end to end, on SQLite: POST /api/v1/tokens (which writes its
// token to the same database) through an admin API without a trail and
// through one whose guard holds the answer until its record is appended.
// The two are called in turn, so both see the same machine; the metric
// p95-added-µs is the difference of their 95th percentiles.
//
//	go test -run '^$' -bench AuditedRequest -benchtime 4000x ./server/audit/
func BenchmarkAuditedRequest(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	book, err := credentials.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	tr := audit.New(audit.Options{Store: db})
	log := slog.New(slog.DiscardHandler)
	sink := func(ctx context.Context, e admin.AuditEntry) error {
		_, err := tr.Append(ctx, audit.Record{Actor: e.Actor, Role: e.Role, Via: e.Via, Action: e.Action, Target: e.Target,
			Source: e.Source, RequestID: e.RequestID, Outcome: e.Outcome, Detail: e.Detail})
		return err
	}
	plain := httptest.NewServer(admin.New(admin.Deps{AdminToken: "adm", Tokens: book, Log: log}))
	defer plain.Close()
	audited := httptest.NewServer(admin.New(admin.Deps{AdminToken: "adm", Tokens: book, Log: log, Audit: sink}))
	defer audited.Close()

	create := func(base string, i int) time.Duration {
		req, _ := http.NewRequest("POST", base+"/api/v1/tokens", strings.NewReader(fmt.Sprintf(`{"name":"rack-%d"}`, i)))
		req.Header.Set("Authorization", "Bearer adm")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("POST /api/v1/tokens: %d", resp.StatusCode)
		}
		return d
	}
	var without, with []time.Duration
	i := 0
	for b.Loop() {
		without = append(without, create(plain.URL, i))
		with = append(with, create(audited.URL, i+1))
		i += 2
	}
	b.StopTimer()
	// The premise: one record per audited request, none for the others.
	if v, err := tr.Verify(ctx); err != nil || !v.OK || v.Records != int64(len(with)) {
		b.Fatalf("trail after %d audited requests: %+v %v", len(with), v, err)
	}
	p95 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[min(len(ds)-1, int(0.95*float64(len(ds))))].Nanoseconds()) / 1e3
	}
	a, u := p95(with), p95(without)
	b.ReportMetric(u, "p95-plain-µs")
	b.ReportMetric(a, "p95-audited-µs")
	b.ReportMetric(a-u, "p95-added-µs")
}
