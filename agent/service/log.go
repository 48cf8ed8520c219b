package service

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// eventSink is a system log that takes one message per record.
type eventSink interface {
	Report(level slog.Level, msg string) error
	Close() error
}

// Log is where `run` writes its log: stderr, or, when the process runs as a
// Windows service (whose stderr goes nowhere), the Windows Event Log under
// the source Name (Application log), which Install registers.
type Log struct {
	sink    eventSink
	openErr error
}

// OpenLog chooses the log destination for this process.
func OpenLog(byManager bool) *Log {
	s, err := systemLog(byManager)
	return &Log{sink: s, openErr: err}
}

// System reports whether records go to the system log rather than stderr.
func (l *Log) System() bool { return l.sink != nil }

// Logger returns a logger whose records build formats (the configured
// level and text or JSON format), each written to the system log as one
// event at the record's level, or to stderr.
func (l *Log) Logger(build func(io.Writer) slog.Handler, stderr io.Writer) *slog.Logger {
	if l.sink == nil {
		log := slog.New(build(stderr))
		if l.openErr != nil {
			log.Warn("cannot write to the system log; logging to stderr", "err", l.openErr)
		}
		return log
	}
	w := &eventWriter{sink: l.sink}
	return slog.New(&eventHandler{inner: build(w), out: w})
}

// Close releases the system log.
func (l *Log) Close() error {
	if l.sink == nil {
		return nil
	}
	return l.sink.Close()
}

// eventWriter collects what a handler writes for one record. It is used
// only under mu, held by eventHandler.Handle.
type eventWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	sink eventSink
}

func (w *eventWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

// maxEventLen keeps a message under ReportEvent's limit of 31 839 characters.
const maxEventLen = 31 << 10

// eventHandler formats records with inner and reports each as one event.
type eventHandler struct {
	inner slog.Handler
	out   *eventWriter // shared by the handlers derived with WithAttrs/WithGroup
}

func (h *eventHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *eventHandler) Handle(ctx context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.buf.Reset()
	if err := h.inner.Handle(ctx, r); err != nil {
		return err
	}
	msg := strings.TrimSuffix(h.out.buf.String(), "\n")
	if len(msg) > maxEventLen {
		msg = msg[:maxEventLen] + "…"
	}
	return h.out.sink.Report(r.Level, msg)
}

func (h *eventHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &eventHandler{inner: h.inner.WithAttrs(as), out: h.out}
}

func (h *eventHandler) WithGroup(name string) slog.Handler {
	return &eventHandler{inner: h.inner.WithGroup(name), out: h.out}
}
