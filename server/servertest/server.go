package servertest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server"
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
		o.CheckResponses = CheckResponses(t)
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

// CheckResponses fails t on each admin API answer that does not match the
// API document (server.Options.CheckResponses): a new field or a changed
// type fails the tests until api/openapi.yaml says it.
func CheckResponses(t testing.TB) func(pattern string, err error) {
	return func(pattern string, err error) {
		t.Errorf("the API document does not describe an answer: %v", err)
	}
}
