package config

import (
	"io"
	"log/slog"
)

// NewHandler builds the slog.Handler that log.level and log.format
// describe, writing to w.
func (l LogConfig) NewHandler(w io.Writer) slog.Handler {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if l.Format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// NewLogger builds the slog.Logger that log.level and log.format describe.
func (l LogConfig) NewLogger(w io.Writer) *slog.Logger { return slog.New(l.NewHandler(w)) }
