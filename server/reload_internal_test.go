package server

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/estate"
)

// signalHandler closes serving when the server logs that it serves.
type signalHandler struct {
	slog.Handler
	serving chan struct{}
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "myriarchd serving" {
		close(h.serving)
	}
	return nil
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h signalHandler) WithGroup(string) slog.Handler            { return h }

// TestShutdownDuringALongReload: a reload that does not end (a huge or
// hostile estate) must not keep SIGTERM from stopping the server.
func TestShutdownDuringALongReload(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(dir+"/inventory", 0o755)
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	loadEstate = func(d string) (*estate.Estate, error) {
		close(entered)
		<-release
		return estate.Load(d)
	}
	defer func() { loadEstate = estate.Load }()

	serving := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	reload := make(chan struct{}, 1)
	ended := make(chan error, 1)
	go func() {
		ended <- Run(ctx, Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", Estate: dir,
			Log: slog.New(signalHandler{slog.DiscardHandler, serving})}, reload)
	}()
	select {
	case <-serving:
	case <-time.After(30 * time.Second):
		t.Fatal("server did not start")
	}
	reload <- struct{}{}
	<-entered
	cancel() // SIGTERM
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop while an estate reload was running")
	}
}

// A file written while a load that fails reads the estate is a revision
// not yet tried: the poll loads it, instead of taking it for the failed
// one (the revision is the one the load read, not the one there after).
func TestPollAfterAFailedLoadMeetsAWrite(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(dir+"/fleets", 0o755)
	fleet := dir + "/fleets/edge.yaml"
	write := func(content string) {
		if err := os.WriteFile(fleet, []byte(content), 0o644); err != nil {
			t.Error(err)
		}
	}
	readme := dir + "/README.md"
	if err := os.WriteFile(readme, []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	fixed := make(chan struct{})
	loadEstate = func(d string) (*estate.Estate, error) {
		e, err := estate.Load(d)
		if armed.CompareAndSwap(true, false) {
			if err == nil {
				t.Error("the broken estate loaded")
			}
			// The operator's fix lands while this load fails.
			if err := os.Remove(fleet); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(readme, []byte("v2\n"), 0o644); err != nil {
				t.Error(err)
			}
			close(fixed)
		}
		return e, err
	}
	defer func() { loadEstate = estate.Load }()
	s, err := New(context.Background(), Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		Estate: dir, EstatePoll: 20 * time.Millisecond, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	armed.Store(true)
	write("name: [\n")
	<-fixed
	want, err := estate.Revision(dir)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, 20*time.Second, "the fixed estate loaded", func() bool {
		s.estateMu.Lock()
		defer s.estateMu.Unlock()
		return s.estate != nil && s.estate.Revision == want
	})
}
