package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server"
)

// A part of the server that fails to start leaves nothing behind: New
// names the part, and what was built before it is closed again — no
// goroutine left running, no file left open, no address left bound. Every
// part is made to fail in turn (the parts are those the server starts, so
// a new one is covered too), with a store of the server's own and with a
// shared one (whose parts include the cluster's).
func TestAFailedPartLeavesNothingBehind(t *testing.T) {
	for name, dsn := range map[string]func(t *testing.T) string{
		"sqlite":   func(*testing.T) string { return server.StoreSQLite },
		"postgres": func(t *testing.T) string { return testenv.Postgres(t) },
	} {
		t.Run(name, func(t *testing.T) {
			store := dsn(t)
			opts := func(t *testing.T) server.Options {
				return server.Options{DataDir: t.TempDir(), Store: store, Listen: freeAddr(t), AdminListen: freeAddr(t),
					Estate: newEstate(t).dir, Log: slog.New(slog.DiscardHandler)}
			}
			parts := startedParts(t, opts(t))
			for _, part := range parts {
				t.Run(part, func(t *testing.T) {
					o := opts(t)
					goroutines, files := goleak.IgnoreCurrent(), openFiles(t)
					injected := errors.New("injected")
					s, err := server.New(context.Background(), server.WithStartHook(o, func(c string) error {
						if c == part {
							return injected
						}
						return nil
					}))
					if s != nil || !errors.Is(err, injected) || err.Error() != part+": injected" {
						t.Fatalf("New with %s failing: %v, %v; want the part's error alone", part, s, err)
					}
					goleak.VerifyNone(t, goroutines)
					if left := slices.DeleteFunc(openFiles(t), func(f string) bool { return slices.Contains(files, f) }); len(left) > 0 {
						t.Errorf("files left open: %q", left)
					}
					for _, addr := range []string{o.Listen, o.AdminListen} {
						ln, err := net.Listen("tcp", addr)
						if err != nil {
							t.Errorf("%s left bound: %v", addr, err)
							continue
						}
						ln.Close()
					}
				})
			}
		})
	}
}

// startedParts builds a server with opts, naming its parts as they start,
// and closes it.
func startedParts(t *testing.T, opts server.Options) []string {
	t.Helper()
	var parts []string
	s, err := server.New(context.Background(), server.WithStartHook(opts, func(c string) error {
		parts = append(parts, c)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"store", "cluster sync", "agent connections"} {
		if !slices.Contains(parts, want) {
			t.Fatalf("parts %q lack %q", parts, want)
		}
	}
	return parts
}

// openFiles lists the process's open file descriptors with what each is
// (a file's path, a socket's inode), on Linux; elsewhere none.
func openFiles(t *testing.T) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		return nil
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil {
			out = append(out, e.Name()+" "+target)
		}
	}
	return out
}
