package owntelemetry

import (
	"context"
	"log/slog"
)

// Handler returns a handler that writes to base and, while own logs are
// exported, also exports records at Info and above.
func (x *Exporter) Handler(base slog.Handler) slog.Handler {
	return &tee{base: base, x: x}
}

// tee writes to base and to the exporter's current OTel handler, on which
// the attributes and groups added to it are replayed (they are added
// before the destination may change).
type tee struct {
	base slog.Handler
	x    *Exporter
	ops  []func(slog.Handler) slog.Handler
}

func (t *tee) otel() slog.Handler {
	p := t.x.handler.Load()
	if p == nil {
		return nil
	}
	h := *p
	for _, op := range t.ops {
		h = op(h)
	}
	return h
}

func (t *tee) Enabled(ctx context.Context, l slog.Level) bool {
	return t.base.Enabled(ctx, l) || (l >= slog.LevelInfo && t.x.handler.Load() != nil)
}

func (t *tee) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if t.base.Enabled(ctx, r.Level) {
		err = t.base.Handle(ctx, r)
	}
	if r.Level >= slog.LevelInfo {
		if h := t.otel(); h != nil {
			_ = h.Handle(ctx, r.Clone()) // the exporter reports its own failures
		}
	}
	return err
}

func (t *tee) WithAttrs(as []slog.Attr) slog.Handler {
	return &tee{base: t.base.WithAttrs(as), x: t.x, ops: append(t.ops[:len(t.ops):len(t.ops)], func(h slog.Handler) slog.Handler { return h.WithAttrs(as) })}
}

func (t *tee) WithGroup(name string) slog.Handler {
	return &tee{base: t.base.WithGroup(name), x: t.x, ops: append(t.ops[:len(t.ops):len(t.ops)], func(h slog.Handler) slog.Handler { return h.WithGroup(name) })}
}
