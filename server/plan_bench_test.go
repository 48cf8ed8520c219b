package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server"
)

// BenchmarkEstatePlan: the plan of a Blueprint change on 10 000
// configured collectors (MYRIARCH_BENCH_COLLECTORS to change), each on its
// own site or 500 sites (one body per site). One op is what POST
// /api/v1/estate/plan does for the estate directory: load it, render every
// collector under it, diff one per distinct body (at most plan.MaxDiffs),
// and encode the answer.
//
//	go test -run '^$' -bench EstatePlan -benchtime 5x ./server/
func BenchmarkEstatePlan(b *testing.B) {
	n := envInt(b, "MYRIARCH_BENCH_COLLECTORS", 10000)
	for _, sites := range []int{500, n} {
		b.Run(fmt.Sprintf("sites=%d", sites), func(b *testing.B) {
			estateDir := b.TempDir()
			opts := server.Options{DataDir: b.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
				Estate: estateDir, Log: slog.New(slog.DiscardHandler)}
			buildConfiguredDataDir(b, opts, estateDir, n, sites)
			s, err := server.New(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				s.Close(ctx)
			}()
			bp := filepath.Join(estateDir, "teams/data-flow/blueprints/gw.yaml")
			var size int
			port := 4318
			for b.Loop() {
				b.StopTimer()
				port++
				if err := os.WriteFile(bp, []byte(strings.Replace(configBlueprint, "127.0.0.1:4318", fmt.Sprintf("127.0.0.1:%d", port), 1)), 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				p, err := s.PlanEstate(context.Background(), "")
				if err != nil {
					b.Fatal(err)
				}
				out, err := json.Marshal(p)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if p.Summary.Changed != n || len(p.Fleets) != 1 || len(p.Fleets[0].Bodies) != min(sites, 1000) {
					b.Fatalf("plan: %+v, %d bodies", p.Summary, len(p.Fleets[0].Bodies))
				}
				size = len(out)
				b.StartTimer()
			}
			b.ReportMetric(float64(size)/(1<<20), "MiB-answer")
		})
	}
}
