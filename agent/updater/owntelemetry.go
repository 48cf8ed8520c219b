package updater

import (
	"context"
	"time"

	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/owntelemetry"
	"github.com/myriarch/myriarch/internal/buildinfo"
)

// OwnTelemetry exports the updater's own metrics and logs where the server
// offers (agent/owntelemetry). Apply is called from the OpAMP client's
// goroutine with every offer; nil or empty settings stop a signal.
type OwnTelemetry interface {
	Apply(ctx context.Context, id owntelemetry.Identity, metrics, logs *protobufs.TelemetryConnectionSettings) error
}

// WithOwnTelemetry exports the updater's own telemetry to what the server
// offers: the updater then reports ReportsOwnMetrics and ReportsOwnLogs.
// It serves nothing: it sends to the offered OTLP/HTTP endpoints.
func WithOwnTelemetry(t OwnTelemetry) Option {
	return func(o *options) { o.own = t }
}

// capabilities are what the updater announces.
func (u *Updater) capabilities() protobufs.AgentCapabilities {
	c := Capabilities
	if u.opts.own != nil {
		c |= protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnMetrics | protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnLogs
	}
	return c
}

// applyOwnTelemetry follows an offer of own-telemetry settings. Like the
// upstream Supervisor, an offer replaces the whole set: a signal it does
// not name stops.
func (u *Updater) applyOwnTelemetry(msg *types.MessageData) {
	if u.opts.own == nil || (msg.OwnMetricsConnSettings == nil && msg.OwnLogsConnSettings == nil) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u.mu.Lock()
	host := u.facts.host.HostName
	u.mu.Unlock()
	id := owntelemetry.Identity{InstanceUID: u.uid.String(), Version: buildinfo.Version, Host: host}
	if err := u.opts.own.Apply(ctx, id, msg.OwnMetricsConnSettings, msg.OwnLogsConnSettings); err != nil {
		u.log.Warn("own telemetry: the offered destination is not used", "err", err)
	}
}
