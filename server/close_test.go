package server_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/server"
)

// Close ends every goroutine the server started, whether it was started
// or only built (a server that is never started still has its OpAMP
// poller running).
func TestCloseEndsEveryGoroutine(t *testing.T) {
	for _, start := range []bool{false, true} {
		name := map[bool]string{false: "built only", true: "started"}[start]
		t.Run(name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			s, err := server.New(context.Background(), server.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
				AdminListen: "127.0.0.1:0", Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if start {
				if err := s.Start(); err != nil {
					t.Fatal(err)
				}
				waitAnswering(t, s)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			goleak.VerifyNone(t, before)
		})
	}
}
