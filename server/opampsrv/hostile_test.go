package opampsrv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/backpressure"
)

// newTestEndpoint serves an endpoint whose only credential is "good".
func newTestEndpoint(t *testing.T, log *slog.Logger, m Metrics, opts Options) (*Server, string) {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := New(nil, tokenAuth{}, log, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, s.Handler())
	go s.Serve(ln, mux, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s, ln.Addr().String()
}

// rawRequest sends a request head and the first bytes of its body, then
// returns the status line read within 10 s ("" if none came).
func rawRequest(t *testing.T, addr, head string, body []byte) (status string, nc net.Conn) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write(append([]byte(head), body...)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, _ := bufio.NewReader(nc).ReadString('\n')
	return strings.TrimSpace(line), nc
}

func postHead(token string, contentLength int, gzip bool) string {
	h := "POST /v1/opamp HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n", contentLength)
	if token != "" {
		h += "Authorization: Bearer " + token + "\r\n"
	}
	if gzip {
		h += "Content-Encoding: gzip\r\n"
	}
	return h + "\r\n"
}

// TestNoBodyBeforeAuthentication: a request without a credential is
// refused from its headers; its body is never waited for.
func TestNoBodyBeforeAuthentication(t *testing.T) {
	_, addr := newTestEndpoint(t, nil, Metrics{}, Options{})
	// 9 MiB announced, 1 KiB sent: waiting for the body would hang.
	status, nc := rawRequest(t, addr, postHead("", 9<<20, true), make([]byte, 1024))
	if !strings.Contains(status, "401") {
		t.Fatalf("unauthenticated 9 MiB POST answered %q, want 401 at once", status)
	}
	// And the connection ends with the answer.
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	for {
		if _, err := nc.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("connection of a refused request still open after 10 s")
			}
			break
		}
	}
}

// TestSlowBodies: an authenticated body that stalls or trickles is cut
// within the body timeout, with 408.
func TestSlowBodies(t *testing.T) {
	rec := &recorder{}
	_, addr := newTestEndpoint(t, nil, Metrics{Reject: rec.reject}, Options{BodyTimeout: 500 * time.Millisecond})
	t.Run("stalled", func(t *testing.T) {
		status, _ := rawRequest(t, addr, postHead("good", 1000, false), []byte("0123456789"))
		if !strings.Contains(status, "408") {
			t.Fatalf("stalled body answered %q, want 408 within the body timeout", status)
		}
	})
	t.Run("trickled", func(t *testing.T) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write([]byte(postHead("good", 1000, false)))
		done := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(nc).ReadString('\n')
			done <- line
		}()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case line := <-done:
				if !strings.Contains(line, "408") {
					t.Fatalf("trickled body answered %q, want 408", line)
				}
				return
			case <-tick.C:
				if i > 100 {
					t.Fatal("a body trickled at 10 bytes/s was still read after 10 s")
				}
				nc.Write([]byte{'x'})
			}
		}
	})
	if got := strings.Join(rec.take(), ","); got != "slow_body,slow_body" {
		t.Errorf("rejects %s, want slow_body twice", got)
	}
}

// TestMinBodyRate: past the grace period a body below the minimum rate fails.
func TestMinBodyRate(t *testing.T) {
	b := &timedBody{r: http.NoBody, minRate: 1000, start: time.Now().Add(-10 * time.Second), n: 9000}
	var slow *slowBodyError
	if _, err := b.Read(make([]byte, 1)); !errors.As(err, &slow) || !strings.Contains(err.Error(), "below the minimum") {
		t.Fatalf("9000 bytes in 10 s at a minimum of 1000/s: %v", err)
	}
}

// TestFailuresDoNotSpendAdmissions: a flood of upgrade requests without a
// credential must not use up the admission budget of real agents.
func TestFailuresDoNotSpendAdmissions(t *testing.T) {
	adm := backpressure.New(backpressure.Options{Rate: 10, Burst: 20})
	_, addr := newTestEndpoint(t, nil, Metrics{}, Options{Gate: func() (int, int) {
		if ok, _ := adm.Admit(); !ok {
			return http.StatusServiceUnavailable, 1
		}
		return 0, 0
	}})
	upgrade := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+Path, nil)
		for k, v := range upgradeHeader {
			req.Header.Set(k, v)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	stop := make(chan struct{})
	var flood sync.WaitGroup
	for range 4 {
		flood.Go(func() {
			for i := 0; i < 2000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				upgrade("")
			}
		})
	}
	var refused []int
	for range 12 {
		if code := upgrade("good"); code != http.StatusSwitchingProtocols {
			refused = append(refused, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	flood.Wait()
	if len(refused) > 0 {
		t.Fatalf("a real agent was refused %d of 12 times during a flood without credentials: %v", len(refused), refused)
	}
}

// TestRefusalsAreLoggedPerSource: a flood of refused requests from one
// source is logged once (then counted), and every refusal is counted.
func TestRefusalsAreLoggedPerSource(t *testing.T) {
	var buf syncBuffer
	rec := &recorder{}
	log := slog.New(slog.NewTextHandler(&buf, nil))
	// A budget that does not refill while the test runs.
	_, addr := newTestEndpoint(t, log, Metrics{Reject: rec.reject}, Options{FailureRate: 1e-6, FailureBurst: 20})
	const n = 300
	statuses := map[int]int{}
	for range n {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+Path, bytes.NewReader([]byte("x")))
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Authorization", "Bearer wrong")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses[resp.StatusCode]++
	}
	if lines := strings.Count(buf.String(), "refused agent connection"); lines != 1 {
		t.Errorf("%d log lines for %d refusals from one source, want 1:\n%s", lines, n, buf.String())
	}
	if got := len(rec.take()); got != n {
		t.Errorf("%d refusals counted, want %d", got, n)
	}
	if statuses[http.StatusUnauthorized] != 20 || statuses[http.StatusTooManyRequests] != n-20 {
		t.Errorf("statuses %v, want 20 × 401 (the source's budget) then 429", statuses)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
