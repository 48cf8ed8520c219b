package servertest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/apispec/apispectest"
)

// StartServer starts a real myriarchd with o: unless o says otherwise, on
// SQLite in a temporary directory, both listeners on 127.0.0.1 with a port
// of the kernel's choosing, logging nowhere. It is closed when t ends,
// after what t starts later (cleanups run last first), so agents stop
// while it still answers; a close that fails fails t.
func StartServer(t testing.TB, o server.Options) *server.Server {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.AdminListen == "" {
		o.AdminListen = "127.0.0.1:0"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.CheckResponses == nil {
		o.CheckResponses = apispectest.CheckResponses(t)
	}
	s, err := server.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	closeIt := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return s.Close(ctx)
	}
	if err := s.Start(); err != nil {
		closeIt()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := closeIt(); err != nil {
			t.Errorf("closing the server: %v", err)
		}
	})
	return s
}

// API calls s's admin API with its admin token and returns the status and
// body; a request that cannot be made fails t.
func API(t testing.TB, s *server.Server, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.AdminAddr().String()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}
