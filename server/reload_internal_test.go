package server

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

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
