package admin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv"
)

// benchPairs is the fleet size of BenchmarkListAgents (MYRIARCH_BENCH_PAIRS
// overrides it): 50 000 pairs = 100 000 agents, the load test's largest run.
func benchPairs(b *testing.B) int { return testenv.BenchPairs(b, 50000) }

func get(b *testing.B, c *http.Client, url string) (*http.Response, error) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer adm")
	return c.Do(req)
}

// BenchmarkListAgents measures GET /api/v1/agents end to end (request to
// the last byte read by the client) over every agent of the fleet.
func BenchmarkListAgents(b *testing.B) {
	pairs := benchPairs(b)
	f := newFleet(b, pairs)
	defer f.close()
	srv := httptest.NewServer(f.api)
	defer srv.Close()
	c := srv.Client()

	// The premise: every agent comes back.
	resp, err := get(b, c, srv.URL+"/api/v1/agents")
	if err != nil {
		b.Fatal(err)
	}
	var out struct {
		Agents []json.RawMessage `json:"agents"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || len(out.Agents) != 2*pairs {
		b.Fatalf("listing: %d agents, %v; want %d", len(out.Agents), err, 2*pairs)
	}
	out.Agents = nil

	// MYRIARCH_BENCH_POLLS=N keeps N plain-HTTP polls a second going during
	// the listings, as the load test's agents do (3 300 at 100 000 agents).
	if v := os.Getenv("MYRIARCH_BENCH_POLLS"); v != "" {
		rate, err := strconv.Atoi(v)
		if err != nil || rate < 1 {
			b.Fatalf("MYRIARCH_BENCH_POLLS=%q: want a positive integer", v)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		defer func() { close(stop); <-done }()
		go f.poll(rate, stop, done)
	}

	b.Run("all", func(b *testing.B) {
		var size int64
		for b.Loop() {
			resp, err := get(b, c, srv.URL+"/api/v1/agents")
			if err != nil {
				b.Fatal(err)
			}
			size, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("GET: %d %v", resp.StatusCode, err)
			}
		}
		b.ReportMetric(float64(size)/float64(2*pairs), "bytes/agent")
	})
	// Walked as myriarchd agents list does, in pages of 1000 (the client's
	// decoding left out: the cursor and the count are cut from the bytes).
	b.Run("pages of 1000", func(b *testing.B) {
		for b.Loop() {
			n, after := 0, ""
			for {
				url := srv.URL + "/api/v1/agents?limit=1000"
				if after != "" {
					url += "&after=" + after
				}
				resp, err := get(b, c, url)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("GET: %d %v", resp.StatusCode, err)
				}
				n += bytes.Count(body, []byte("\n      \"instanceUid\": "))
				i := bytes.LastIndex(body, []byte(`"next": "`))
				if i < 0 {
					break
				}
				after = string(body[i+9 : i+9+36])
			}
			if n != 2*pairs {
				b.Fatalf("pages held %d agents, want %d", n, 2*pairs)
			}
		}
	})
}
