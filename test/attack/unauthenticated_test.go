//go:build linux

package attack

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// gzipOf compresses n zero bytes.
func gzipOf(n int) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(make([]byte, n))
	zw.Close()
	return b.Bytes()
}

// TestUnauthenticatedBodies (finding 1): requests without a credential are
// refused from their headers: their bodies are never read (a 9 MiB POST
// gets 401, not 413), their connections end at once, and 1 000 such
// attackers, each holding a started gzip body of 8 MiB inflated, cost the
// server little.
func TestUnauthenticatedBodies(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "--log-level", "warn")

	req, _ := http.NewRequest(http.MethodPost, "http://"+d.opamp+opampPath, bytes.NewReader(make([]byte, 9<<20)))
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := d.http.Do(req)
	if err != nil && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
		t.Fatal(err)
	}
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("9 MiB POST without a token: %d, want 401", resp.StatusCode)
		}
	}

	const attackers = 1000
	body := gzipOf(8 << 20)[:8<<10] // 8 KiB of a gzip stream that inflates to 8 MiB
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n",
		opampPath, 8<<20)
	before := d.rss()
	conns := make([]net.Conn, 0, attackers)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	during := before
	for i := range attackers {
		nc, err := net.Dial("tcp", d.opamp)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		nc.Write([]byte(head))
		nc.Write(body) // and then stall
		if i%50 == 49 {
			during = max(during, d.rss())
		}
	}
	during = max(during, d.rss())
	open := stillOpen(conns, 10*time.Second)
	figure(t, "1 000 unauthenticated attackers with a started 8 MiB gzip body: RSS %s, at most %s during the attack (+%s), goal < 50 MB; connections still open after 10 s: %d",
		mib(before), mib(during), mib(during-before), open)
	if open > 0 {
		t.Errorf("%d of %d refused connections still open after 10 s", open, attackers)
	}
	if during-before > 50<<20 {
		t.Errorf("1 000 unauthenticated attackers cost %s, goal < 50 MB", mib(during-before))
	}
}

// TestFailedAuthenticationFlood (findings 3 and 11): a flood of upgrade
// requests without a credential spends neither the admission budget of
// real agents nor the log: a real agent connects every time, the refusals
// are counted and logged once per source and minute.
func TestFailedAuthenticationFlood(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	const flood = 5000
	stop := make(chan struct{})
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	sent := make(chan int, 8)
	for range 8 {
		wg.Go(func() {
			n := 0
			defer func() { sent <- n }()
			for n < flood/8 {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodGet, "http://"+d.opamp+opampPath, nil)
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", "websocket")
				req.Header.Set("Sec-WebSocket-Version", "13")
				req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
				if resp, err := tr.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
				n++
			}
		})
	}
	var refused []string
	time.Sleep(100 * time.Millisecond) // the flood is on
	for range 12 {
		a, err := dialWS(t, d, secret)
		if err != nil {
			refused = append(refused, err.Error())
			continue
		}
		a.register(uuid.New())
		a.ws.Close()
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	close(stop)
	total := 0
	for range 8 {
		total += <-sent
	}
	if len(refused) > 0 {
		t.Errorf("a real agent was refused %d of 12 times during the flood: %v", len(refused), refused)
	}
	rejects := d.metric("myriarch_opamp_rejects_total", `reason="unauthorized`)
	lines := strings.Count(d.log(), "refused agent connection")
	figure(t, "%d upgrade requests without a credential: a real agent refused %d of 12 times; %0.f refusals counted, %d log lines",
		total, len(refused), rejects, lines)
	if rejects < float64(total) {
		t.Errorf("%0.f refusals counted, %d requests made", rejects, total)
	}
	if lines > 2 {
		t.Errorf("%d log lines for %d refusals from one source, want 1 a minute", lines, total)
	}
}

// TestGzipBomb (held): an authenticated gzip body inflating past 8 MiB is
// refused with 413 without inflating it in memory.
func TestGzipBomb(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	_, secret := d.token("site")
	bomb := gzipOf(64 << 20) // 64 MiB of zeros in 64 KB
	heapBefore, before := d.heapAfterGC(), d.rss()
	for range 4 {
		req, _ := http.NewRequest(http.MethodPost, "http://"+d.opamp+opampPath, bytes.NewReader(bomb))
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "gzip")
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := d.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("gzip bomb: %d, want 413", resp.StatusCode)
		}
	}
	grew := d.heapAfterGC() - heapBefore
	figure(t, "gzip bomb (64 MiB inflated, 64 KB sent) ×4: 413; live heap %+.2f MiB, RSS +%s (the 8 MiB bound read once per request)",
		float64(grew)/(1<<20), mib(d.rss()-before))
	if grew > 2<<20 {
		t.Errorf("gzip bombs left %s more live heap", mib(grew))
	}
}

// TestIdleSockets (held): 2 000 sockets that never send a request are
// closed by the header timeout (10 s).
func TestIdleSockets(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	const n = 2000
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		nc, err := net.Dial("tcp", d.opamp)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
	}
	start := time.Now()
	open := stillOpen(conns, 20*time.Second)
	figure(t, "2 000 idle sockets: all closed after %s (header timeout 10 s), %d left open", time.Since(start).Round(100*time.Millisecond), open)
	if open > 0 {
		t.Errorf("%d idle sockets still open after 20 s", open)
	}
}
