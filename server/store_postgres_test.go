package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
)

// syncBuffer is a log sink tests read while the server writes.
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

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A PostgreSQL that is down when myriarchd starts: the server waits,
// logging each attempt, /healthz answers and /readyz says 503 naming the
// store; once PostgreSQL is up, the server starts and is ready.
func TestPostgresDownAtStart(t *testing.T) {
	pg := testenv.StartCluster(t)
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	adminAddr := freeAddr(t)
	opts := server.Options{DataDir: t.TempDir(), Store: pg.DSN("postgres"), Listen: "127.0.0.1:0", AdminListen: adminAddr,
		Log: slog.New(slog.NewTextHandler(&logs, nil))}
	type result struct {
		s   *server.Server
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := server.New(context.Background(), opts)
		done <- result{s, err}
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + adminAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get("/readyz")
		if code == http.StatusServiceUnavailable {
			var rb admin.ReadyBody
			if err := json.Unmarshal([]byte(body), &rb); err != nil || rb.Ready || len(rb.NotReady) != 1 || !strings.HasPrefix(rb.NotReady[0], "store not open: ") {
				t.Fatalf("/readyz while PostgreSQL is down: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never answered 503: %d %s\nlogs:\n%s", code, body, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := get("/healthz"); code != 200 {
		t.Fatalf("/healthz while waiting = %d %s", code, body)
	}
	if code, _ := get("/api/v1/agents"); code != http.StatusServiceUnavailable {
		t.Fatalf("the API while waiting = %d, want 503", code)
	}
	for !strings.Contains(logs.String(), "attempt=2") {
		if time.Now().After(deadline) {
			t.Fatalf("no second attempt logged:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if l := logs.String(); !strings.Contains(l, "store not reachable") || !strings.Contains(l, "retry_in=") {
		t.Fatalf("the log does not say what is waited for:\n%s", l)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not start after PostgreSQL did:\n%s", logs.String())
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	ts := &testServer{Server: r.s, t: t, opts: opts}
	if err := r.s.Start(); err != nil {
		r.s.Close(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(ts.stop)
	if code, body := get("/readyz"); code != 200 {
		t.Fatalf("/readyz after the store opened = %d %s", code, body)
	}
	if !strings.Contains(logs.String(), "store reachable") {
		t.Fatalf("no log line when the store became reachable:\n%s", logs.String())
	}
}

// What retrying cannot fix stops the start at once, named.
func TestPostgresPermanentStoreErrors(t *testing.T) {
	pg := testenv.StartCluster(t)
	cases := []struct{ name, store, want string }{
		{"missing database", strings.Replace(pg.DSN("postgres"), "/postgres?", "/nosuchdb?", 1), "nosuchdb"},
		{"malformed", "postgres://u:pw@h:port/db", "cannot parse"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := server.New(ctx, server.Options{DataDir: t.TempDir(), Store: c.store, Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
			if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v (waited: %v), want an immediate error naming %q", err, ctx.Err(), c.want)
			}
		})
	}
	bad := server.Options{DataDir: "/d", Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", Store: "mysql://u:secret@h/db"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--store") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("Validate = %v, want a --store error without the password", err)
	}
}
