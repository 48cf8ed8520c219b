package owntelemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// The SDK's data is sent as OTLP/HTTP with the JSON encoding, which every
// OTLP/HTTP receiver takes. The SDK's own OTLP exporters encode protobuf
// and bring gRPC and the OTLP descriptors with them: 5 MiB more resident
// memory in an idle updater, for the few sums and gauges it reports.

// post sends one OTLP/JSON request; any answer but 2xx is an error.
type post struct {
	url     string
	headers map[string]string
	client  *http.Client
}

func newPost(url string, headers map[string]string) *post {
	// No redirect is followed: it could lead where the trust settings
	// would not let the destination be.
	return &post{url: url, headers: headers, client: &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (p *post) send(ctx context.Context, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range p.headers {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered HTTP %d: %s", p.url, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

// metricExporter is an sdkmetric.Exporter posting OTLP/JSON.
type metricExporter struct{ p *post }

var _ sdkmetric.Exporter = metricExporter{}

func (metricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	return e.p.send(ctx, map[string]any{"resourceMetrics": []any{encodeResourceMetrics(rm)}})
}

func (metricExporter) ForceFlush(context.Context) error { return nil }
func (metricExporter) Shutdown(context.Context) error   { return nil }

// logExporter is an sdklog.Exporter posting OTLP/JSON.
type logExporter struct{ p *post }

var _ sdklog.Exporter = logExporter{}

func (e logExporter) Export(ctx context.Context, records []sdklog.Record) error {
	if len(records) == 0 {
		return nil
	}
	return e.p.send(ctx, map[string]any{"resourceLogs": encodeLogs(records)})
}

func (logExporter) ForceFlush(context.Context) error { return nil }
func (logExporter) Shutdown(context.Context) error   { return nil }

// OTLP/JSON: 64-bit integers are strings, enums are numbers.
const cumulative, delta = 2, 1

func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

func encodeResource(r *resource.Resource) map[string]any {
	return map[string]any{"attributes": encodeAttrs(r.Attributes())}
}

func encodeAttrs(kvs []attribute.KeyValue) []any {
	out := make([]any, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, map[string]any{"key": string(kv.Key), "value": encodeValue(kv.Value)})
	}
	return out
}

func encodeValue(v attribute.Value) map[string]any {
	switch v.Type() {
	case attribute.BOOL:
		return map[string]any{"boolValue": v.AsBool()}
	case attribute.INT64:
		return map[string]any{"intValue": strconv.FormatInt(v.AsInt64(), 10)}
	case attribute.FLOAT64:
		return map[string]any{"doubleValue": v.AsFloat64()}
	case attribute.STRING:
		return map[string]any{"stringValue": v.AsString()}
	}
	return map[string]any{"stringValue": v.Emit()}
}

func encodeResourceMetrics(rm *metricdata.ResourceMetrics) map[string]any {
	scopes := make([]any, 0, len(rm.ScopeMetrics))
	for _, sm := range rm.ScopeMetrics {
		ms := make([]any, 0, len(sm.Metrics))
		for _, m := range sm.Metrics {
			if enc := encodeMetric(m); enc != nil {
				ms = append(ms, enc)
			}
		}
		scopes = append(scopes, map[string]any{"scope": map[string]any{"name": sm.Scope.Name, "version": sm.Scope.Version}, "metrics": ms})
	}
	return map[string]any{"resource": encodeResource(rm.Resource), "scopeMetrics": scopes}
}

// encodeMetric encodes the sums and gauges the updater reports (nil for
// another kind of data).
func encodeMetric(m metricdata.Metrics) map[string]any {
	out := map[string]any{"name": m.Name, "description": m.Description, "unit": m.Unit}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		out["sum"] = map[string]any{"aggregationTemporality": temporality(d.Temporality), "isMonotonic": d.IsMonotonic, "dataPoints": points(d.DataPoints)}
	case metricdata.Sum[float64]:
		out["sum"] = map[string]any{"aggregationTemporality": temporality(d.Temporality), "isMonotonic": d.IsMonotonic, "dataPoints": points(d.DataPoints)}
	case metricdata.Gauge[int64]:
		out["gauge"] = map[string]any{"dataPoints": points(d.DataPoints)}
	case metricdata.Gauge[float64]:
		out["gauge"] = map[string]any{"dataPoints": points(d.DataPoints)}
	default:
		return nil
	}
	return out
}

func temporality(t metricdata.Temporality) int {
	if t == metricdata.DeltaTemporality {
		return delta
	}
	return cumulative
}

func points[N int64 | float64](dps []metricdata.DataPoint[N]) []any {
	out := make([]any, 0, len(dps))
	for _, dp := range dps {
		p := map[string]any{"attributes": encodeAttrs(dp.Attributes.ToSlice()), "startTimeUnixNano": nanos(dp.StartTime), "timeUnixNano": nanos(dp.Time)}
		switch v := any(dp.Value).(type) {
		case int64:
			p["asInt"] = strconv.FormatInt(v, 10)
		case float64:
			p["asDouble"] = v
		}
		out = append(out, p)
	}
	return out
}

// encodeLogs groups records by resource and scope, in their order.
func encodeLogs(records []sdklog.Record) []any {
	type group struct {
		res   *resource.Resource
		scope string
		recs  []any
	}
	var groups []*group
	for i := range records {
		r := &records[i]
		scope := r.InstrumentationScope().Name
		var g *group
		for _, x := range groups {
			if x.res == r.Resource() && x.scope == scope {
				g = x
			}
		}
		if g == nil {
			g = &group{res: r.Resource(), scope: scope}
			groups = append(groups, g)
		}
		var attrs []attribute.KeyValue
		r.WalkAttributes(func(kv attribute.KeyValue) bool { attrs = append(attrs, kv); return true })
		g.recs = append(g.recs, map[string]any{
			"timeUnixNano": nanos(r.Timestamp()), "observedTimeUnixNano": nanos(r.ObservedTimestamp()),
			"severityNumber": int(r.Severity()), "severityText": r.SeverityText(),
			"body": encodeValue(r.Body()), "attributes": encodeAttrs(attrs),
		})
	}
	out := make([]any, 0, len(groups))
	for _, g := range groups {
		res := map[string]any{"attributes": []any{}}
		if g.res != nil {
			res = encodeResource(g.res)
		}
		out = append(out, map[string]any{"resource": res,
			"scopeLogs": []any{map[string]any{"scope": map[string]any{"name": g.scope}, "logRecords": g.recs}}})
	}
	return out
}
