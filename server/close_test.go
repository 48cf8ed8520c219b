package server_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
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

// A start that fails (the admin address taken) says which address, and
// Close afterwards closes what was built without a panic, leaving no
// goroutine behind and the OpAMP address free again.
func TestCloseAfterAFailedStart(t *testing.T) {
	before := goleak.IgnoreCurrent()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	s, err := server.New(context.Background(), server.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		AdminListen: taken.Addr().String(), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start()
	if err == nil || !strings.Contains(err.Error(), "admin listen "+taken.Addr().String()) {
		t.Fatalf("Start with the admin address taken: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}
