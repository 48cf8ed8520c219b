package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server"
)

// BenchmarkBackup takes `myriarchd backup` of a SQLite data dir holding
// 50 000 collector+updater pairs as a rollout leaves them (100 000
// agents) while the server answers an audited change (a token created)
// every 20 ms: one op is POST /api/v1/backup until the whole archive is
// read. p99-ms is the changes' latency while backups run, p99-idle-ms
// before the first one.
func BenchmarkBackup(b *testing.B) {
	estateDir, dataDir := b.TempDir(), b.TempDir()
	opts := server.Options{DataDir: dataDir, Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		Estate: estateDir, Log: slog.New(slog.DiscardHandler)}
	buildRolledOutDataDir(b, opts, estateDir, 50000)
	s, err := server.New(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	waitAnswering(b, s)
	base := "http://" + s.AdminAddr().String()
	do := func(method, path string, body []byte) (*http.Response, error) {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.AdminToken())
		return http.DefaultClient.Do(req)
	}
	probe := func(stop <-chan struct{}) []time.Duration {
		var lat []time.Duration
		for i := 0; ; i++ {
			select {
			case <-stop:
				return lat
			case <-time.After(20 * time.Millisecond):
			}
			t0 := time.Now()
			resp, err := do("POST", "/api/v1/tokens", fmt.Appendf(nil, `{"name":"probe-%d-%d"}`, time.Now().UnixNano(), i))
			if err != nil {
				b.Error(err)
				return lat
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lat = append(lat, time.Since(t0))
		}
	}
	p99 := func(lat []time.Duration) float64 {
		if len(lat) == 0 {
			return 0
		}
		slices.Sort(lat)
		return float64(lat[len(lat)*99/100]) / float64(time.Millisecond)
	}
	stop := make(chan struct{})
	idle := make(chan []time.Duration)
	go func() { idle <- probe(stop) }()
	time.Sleep(2 * time.Second)
	close(stop)
	idleLat := <-idle

	stop = make(chan struct{})
	var during []time.Duration
	var wg sync.WaitGroup
	wg.Go(func() { during = probe(stop) })
	var size int64
	for b.Loop() {
		resp, err := do("POST", "/api/v1/backup", nil)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("backup: %d, %v", resp.StatusCode, err)
		}
		size = n
	}
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(size)/(1<<20), "archive-MiB")
	b.ReportMetric(p99(during), "p99-ms")
	b.ReportMetric(p99(idleLat), "p99-idle-ms")
}
