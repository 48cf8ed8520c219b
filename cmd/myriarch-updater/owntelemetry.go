package main

import (
	"context"
	"log/slog"
	"net/url"
	"time"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/owntelemetry"
)

// ownTelemetry is the updater's own metrics and logs: counted from the
// start, exported where the server offers.
type ownTelemetry struct {
	counters *owntelemetry.Counters
	exporter *owntelemetry.Exporter
}

func newOwnTelemetry(log *slog.Logger, trust config.TrustConfig) *ownTelemetry {
	c := owntelemetry.NewCounters()
	hosts := trust.TelemetryHostPatterns()
	allow := func(u *url.URL) error { return download.AllowHost(hosts, u, "trust.telemetry_hosts") }
	return &ownTelemetry{counters: c, exporter: owntelemetry.New(c, log.With("component", "owntelemetry"), allow)}
}

// shutdown flushes what is exported, for at most 5 s.
func (o *ownTelemetry) shutdown(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := o.exporter.Shutdown(ctx); err != nil {
		log.Warn("own telemetry: last flush", "err", err)
	}
}
