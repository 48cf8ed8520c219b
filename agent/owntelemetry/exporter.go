package owntelemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/open-telemetry/opamp-go/protobufs"
	"go.opentelemetry.io/contrib/bridges/otelslog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Identity is what the updater's telemetry says it comes from.
type Identity struct {
	InstanceUID, Version, Host string
}

// scope names the instrumentation scope of everything exported.
const scope = "github.com/myriarch/myriarch/agent/owntelemetry"

// Exporter exports the Counters and the updater's logs (see Handler) to
// the destinations last applied. Safe for concurrent use; Shutdown last.
type Exporter struct {
	c   *Counters
	log *slog.Logger // not exported itself (it would feed its own failures)
	// allow refuses a destination the updater's trust settings do not
	// list (nil: any).
	allow func(u *url.URL) error

	mu        sync.Mutex
	meters    *sdkmetric.MeterProvider // guarded by mu
	metricsTo string                   // the destination applied, with its headers; guarded by mu
	loggers   *sdklog.LoggerProvider   // guarded by mu
	logsTo    string                   // guarded by mu

	handler atomic.Pointer[slog.Handler] // the OTel handler while logs are exported
}

// New makes an exporter of c that exports nothing until Apply; allow,
// when set, refuses the destinations it returns an error for.
func New(c *Counters, log *slog.Logger, allow func(u *url.URL) error) *Exporter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Exporter{c: c, log: log, allow: allow}
}

// Apply exports metrics and logs, as coming from id, to what the server
// offers; a nil or empty destination stops that signal. The same
// destination applied again changes nothing. Errors name the signal and
// the endpoint.
func (x *Exporter) Apply(ctx context.Context, id Identity, metrics, logs *protobufs.TelemetryConnectionSettings) error {
	res := resource.NewSchemaless(
		attribute.String("service.name", "myriarch-updater"),
		attribute.String("service.instance.id", id.InstanceUID),
		attribute.String("service.version", id.Version),
		attribute.String("host.name", id.Host),
	)
	x.mu.Lock()
	defer x.mu.Unlock()
	return errors.Join(x.applyMetricsLocked(ctx, res, metrics), x.applyLogsLocked(ctx, res, logs))
}

func (x *Exporter) applyMetricsLocked(ctx context.Context, res *resource.Resource, s *protobufs.TelemetryConnectionSettings) error {
	key := destinationKey(s)
	if key == x.metricsTo {
		return nil
	}
	if x.meters != nil {
		if err := x.meters.Shutdown(ctx); err != nil {
			x.log.Warn("own metrics: flushing to the previous destination", "err", err)
		}
		x.meters, x.metricsTo = nil, ""
	}
	if key == "" {
		x.log.Info("own metrics: not exported (no destination offered)")
		return nil
	}
	endpoint, err := x.endpointURL(s.GetDestinationEndpoint(), "/v1/metrics")
	if err != nil {
		return fmt.Errorf("own metrics: %w", err)
	}
	exp := metricExporter{newPost(endpoint, headers(s))}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	if err := x.c.register(mp.Meter(scope)); err != nil {
		_ = mp.Shutdown(ctx)
		return fmt.Errorf("own metrics: %w", err)
	}
	x.meters, x.metricsTo = mp, key
	x.log.Info("own metrics exported", "endpoint", endpoint)
	return nil
}

func (x *Exporter) applyLogsLocked(ctx context.Context, res *resource.Resource, s *protobufs.TelemetryConnectionSettings) error {
	key := destinationKey(s)
	if key == x.logsTo {
		return nil
	}
	if x.loggers != nil {
		x.handler.Store(nil)
		if err := x.loggers.Shutdown(ctx); err != nil {
			x.log.Warn("own logs: flushing to the previous destination", "err", err)
		}
		x.loggers, x.logsTo = nil, ""
	}
	if key == "" {
		x.log.Info("own logs: not exported (no destination offered)")
		return nil
	}
	endpoint, err := x.endpointURL(s.GetDestinationEndpoint(), "/v1/logs")
	if err != nil {
		return fmt.Errorf("own logs: %w", err)
	}
	exp := logExporter{newPost(endpoint, headers(s))}
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)))
	var h slog.Handler = otelslog.NewHandler(scope, otelslog.WithLoggerProvider(lp))
	x.handler.Store(&h)
	x.loggers, x.logsTo = lp, key
	x.log.Info("own logs exported", "endpoint", endpoint)
	return nil
}

// Shutdown flushes and stops both signals.
func (x *Exporter) Shutdown(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return errors.Join(x.applyMetricsLocked(ctx, nil, nil), x.applyLogsLocked(ctx, nil, nil))
}

// destinationKey identifies a destination with its headers ("" for none).
func destinationKey(s *protobufs.TelemetryConnectionSettings) string {
	if s.GetDestinationEndpoint() == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(s.GetDestinationEndpoint())
	for _, h := range s.GetHeaders().GetHeaders() {
		b.WriteString("\x00" + h.GetKey() + "\x00" + h.GetValue())
	}
	return b.String()
}

func headers(s *protobufs.TelemetryConnectionSettings) map[string]string {
	out := map[string]string{}
	for _, h := range s.GetHeaders().GetHeaders() {
		out[h.GetKey()] = h.GetValue()
	}
	return out
}

// endpointURL is an offered destination as the URL exported to: an
// http(s) URL with a host the trust settings allow; without a path, the
// signal's OTLP/HTTP path.
func (x *Exporter) endpointURL(dest, signalPath string) (string, error) {
	u, err := url.Parse(dest)
	switch {
	case err != nil:
		return "", fmt.Errorf("destination %q is not a URL: %w", dest, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("destination %q: the scheme must be http or https", dest)
	case u.Host == "":
		return "", fmt.Errorf("destination %q has no host", dest)
	case slices.Contains(strings.Split(u.Path, "/"), ".."):
		return "", fmt.Errorf("destination %q has a .. path segment", dest)
	}
	if x.allow != nil {
		if err := x.allow(u); err != nil {
			return "", fmt.Errorf("destination %q: %w", dest, err)
		}
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = signalPath
	}
	return u.String(), nil
}

// register makes m's instruments read the counters at each collection.
func (c *Counters) register(m metric.Meter) error {
	installs, err1 := m.Int64ObservableCounter("myriarch.updater.installs",
		metric.WithDescription("Install transactions ended, by package (myriarch-updater: self-updates), outcome and fault class."))
	took, err2 := m.Float64ObservableCounter("myriarch.updater.install.duration", metric.WithUnit("s"),
		metric.WithDescription("Time the ended install transactions took, by package, outcome and fault class."))
	downloads, err3 := m.Int64ObservableCounter("myriarch.updater.downloads",
		metric.WithDescription("Artifacts downloaded and hashed."))
	bytes, err4 := m.Int64ObservableCounter("myriarch.updater.download.size", metric.WithUnit("By"),
		metric.WithDescription("Bytes of the artifacts downloaded."))
	verify, err5 := m.Int64ObservableCounter("myriarch.updater.verification.failures",
		metric.WithDescription("Downloaded artifacts whose SHA-256 or signature did not verify."))
	snaps, err6 := m.Int64ObservableCounter("myriarch.updater.providers.snapshots",
		metric.WithDescription("Providers snapshots sent to the server."))
	snapSize, err7 := m.Int64ObservableGauge("myriarch.updater.providers.snapshot.size", metric.WithUnit("By"),
		metric.WithDescription("Size of the last providers snapshot sent."))
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7); err != nil {
		return err
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, r := range c.installRows() {
			attrs := metric.WithAttributes(attribute.String("package", r.pkg), attribute.String("outcome", r.outcome), attribute.String("fault", r.fault))
			o.ObserveInt64(installs, r.n, attrs)
			o.ObserveFloat64(took, r.seconds, attrs)
		}
		o.ObserveInt64(downloads, c.downloads.Load())
		o.ObserveInt64(bytes, c.downloadBytes.Load())
		o.ObserveInt64(verify, c.verifyFailures.Load())
		o.ObserveInt64(snaps, c.snapshots.Load())
		o.ObserveInt64(snapSize, c.snapshotBytes.Load())
		return nil
	}, installs, took, downloads, bytes, verify, snaps, snapSize)
	return err
}
