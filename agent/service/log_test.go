package service

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

type event struct {
	level slog.Level
	msg   string
}

type fakeSink struct {
	mu     sync.Mutex
	events []event
	closed bool
}

func (s *fakeSink) Report(l slog.Level, msg string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, event{l, msg})
	return nil
}

func (s *fakeSink) Close() error { s.closed = true; return nil }

func textAt(level slog.Level) func(io.Writer) slog.Handler {
	return func(w io.Writer) slog.Handler {
		return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: dropTime})
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func TestLogToSystemLog(t *testing.T) {
	sink := &fakeSink{}
	l := &Log{sink: sink}
	var stderr bytes.Buffer
	log := l.Logger(textAt(slog.LevelInfo), &stderr)
	log.Debug("not shown")
	log.Info("connected", "endpoint", "wss://h")
	log.With("pkg", "otelcol").WithGroup("install").Warn("slow", "step", "download")
	log.Error("failed", "err", "multi\nline")
	want := []event{
		{slog.LevelInfo, `level=INFO msg=connected endpoint=wss://h`},
		{slog.LevelWarn, `level=WARN msg=slow pkg=otelcol install.step=download`},
		{slog.LevelError, `level=ERROR msg=failed err="multi\nline"`},
	}
	if len(sink.events) != len(want) {
		t.Fatalf("events = %+v", sink.events)
	}
	for i, w := range want {
		if sink.events[i] != w {
			t.Errorf("event %d = %+v, want %+v", i, sink.events[i], w)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr got %q", stderr.String())
	}
	if !l.System() {
		t.Error("System() = false with a sink")
	}
	if err := l.Close(); err != nil || !sink.closed {
		t.Errorf("Close = %v, closed %v", err, sink.closed)
	}
}

func TestLogJSONEventsAreWholeDocuments(t *testing.T) {
	sink := &fakeSink{}
	log := (&Log{sink: sink}).Logger(func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) }, io.Discard)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { log.Info("record", "i", i) })
	}
	wg.Wait()
	if len(sink.events) != 20 {
		t.Fatalf("%d events, want 20", len(sink.events))
	}
	for _, e := range sink.events {
		var m map[string]any
		if err := json.Unmarshal([]byte(e.msg), &m); err != nil || m["msg"] != "record" {
			t.Errorf("event is not one JSON record: %q (%v)", e.msg, err)
		}
	}
}

func TestLogToStderr(t *testing.T) {
	var stderr bytes.Buffer
	l := &Log{openErr: io.ErrClosedPipe}
	l.Logger(textAt(slog.LevelInfo), &stderr).Info("hello")
	out := stderr.String()
	if !strings.Contains(out, "cannot write to the system log") || !strings.Contains(out, "msg=hello") {
		t.Errorf("stderr = %q", out)
	}
	if l.System() || l.Close() != nil {
		t.Error("a stderr log claims a system log")
	}
}

func TestOpenLogOutsideAWindowsService(t *testing.T) {
	if l := OpenLog(false); l.System() {
		t.Fatal("OpenLog in a test process chose the system log; outside a Windows service logs go to stderr")
	}
}
