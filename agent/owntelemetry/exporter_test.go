package owntelemetry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// sink is an OTLP/HTTP receiver keeping what it was sent.
type sink struct {
	mu      sync.Mutex
	metrics []*colmetrics.ExportMetricsServiceRequest // guarded by mu
	logs    []*collogs.ExportLogsServiceRequest       // guarded by mu
	headers []string                                  // X-Key of each request; guarded by mu
	paths   []string                                  // guarded by mu
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, r.URL.Path)
	s.headers = append(s.headers, r.Header.Get("X-Key"))
	switch r.URL.Path {
	case "/v1/metrics":
		var m colmetrics.ExportMetricsServiceRequest
		if protojson.Unmarshal(body, &m) == nil && r.Header.Get("Content-Type") == "application/json" {
			s.metrics = append(s.metrics, &m)
		}
	case "/custom/logs":
		var l collogs.ExportLogsServiceRequest
		if protojson.Unmarshal(body, &l) == nil && r.Header.Get("Content-Type") == "application/json" {
			s.logs = append(s.logs, &l)
		}
	}
	w.Header().Set("Content-Type", "application/json")
}

func attr(kvs []*common.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// The counters reach the offered metrics endpoint (OTLP/JSON, read back
// with the OTLP schema) (its OTLP path added
// when the offer has none), the logs the offered logs endpoint, both with
// the offered headers and the updater's identity; an empty offer stops
// both.
func TestExporterSendsWhereOffered(t *testing.T) {
	s := &sink{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := NewCounters()
	c.Finished("otelcol-contrib", 1500*time.Millisecond, "installed", "")
	c.Finished("myriarch-updater", 2*time.Second, "rolled_back", "artifact")
	c.Downloaded(1000)
	c.Downloaded(234)
	c.VerificationFailed()
	c.SnapshotSent(4096)
	x := New(c, nil, nil)
	log := slog.New(x.Handler(slog.DiscardHandler))
	hdr := &protobufs.Headers{Headers: []*protobufs.Header{{Key: "X-Key", Value: "k1"}}}
	id := Identity{InstanceUID: "0190c0de-0000-7000-8000-000000000001", Version: "1.2.3", Host: "edge-7"}
	ctx := context.Background()
	if err := x.Apply(ctx, id, &protobufs.TelemetryConnectionSettings{DestinationEndpoint: srv.URL, Headers: hdr},
		&protobufs.TelemetryConnectionSettings{DestinationEndpoint: srv.URL + "/custom/logs", Headers: hdr}); err != nil {
		t.Fatal(err)
	}
	log.Info("installed", "version", "0.149.1")
	log.Debug("not exported")
	if err := x.Shutdown(ctx); err != nil { // flushes both
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.metrics) == 0 || len(s.logs) == 0 {
		t.Fatalf("received %v", s.paths)
	}
	for _, h := range s.headers {
		if h != "k1" {
			t.Fatalf("a request without the offered header: %v", s.headers)
		}
	}
	rm := s.metrics[len(s.metrics)-1].GetResourceMetrics()[0]
	if attr(rm.GetResource().GetAttributes(), "service.instance.id") != id.InstanceUID ||
		attr(rm.GetResource().GetAttributes(), "service.name") != "myriarch-updater" || attr(rm.GetResource().GetAttributes(), "host.name") != "edge-7" {
		t.Fatalf("resource %v", rm.GetResource())
	}
	values := map[string]int64{}
	for _, sm := range rm.GetScopeMetrics() {
		for _, m := range sm.GetMetrics() {
			for _, dp := range append(m.GetSum().GetDataPoints(), m.GetGauge().GetDataPoints()...) {
				key := m.GetName()
				if o := attr(dp.GetAttributes(), "outcome"); o != "" {
					key += "/" + attr(dp.GetAttributes(), "package") + "/" + o + "/" + attr(dp.GetAttributes(), "fault")
				}
				values[key] = dp.GetAsInt()
			}
		}
	}
	for k, want := range map[string]int64{
		"myriarch.updater.installs/otelcol-contrib/installed/":            1,
		"myriarch.updater.installs/myriarch-updater/rolled_back/artifact": 1,
		"myriarch.updater.downloads":                                      2,
		"myriarch.updater.download.size":                                  1234,
		"myriarch.updater.verification.failures":                          1,
		"myriarch.updater.providers.snapshots":                            1,
		"myriarch.updater.providers.snapshot.size":                        4096,
	} {
		if got, ok := values[k]; !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d", k, got, ok, want)
		}
	}
	var bodies []string
	for _, l := range s.logs {
		for _, rl := range l.GetResourceLogs() {
			for _, sl := range rl.GetScopeLogs() {
				for _, r := range sl.GetLogRecords() {
					bodies = append(bodies, r.GetBody().GetStringValue())
				}
			}
		}
	}
	if !slices.Contains(bodies, "installed") || slices.Contains(bodies, "not exported") {
		t.Fatalf("log bodies %v", bodies)
	}
}

// A destination that is not an http(s) URL is refused, naming it.
func TestExporterRefusesBadDestinations(t *testing.T) {
	allow := func(u *url.URL) error {
		if u.Hostname() == "forbidden.example" {
			return errors.New("not in trust.telemetry_hosts")
		}
		return nil
	}
	x := New(NewCounters(), nil, allow)
	defer x.Shutdown(context.Background())
	for _, bad := range []string{"127.0.0.1:4318", "ftp://h/x", "http://", "http://h/a/../b", "https://forbidden.example/v1/metrics"} {
		err := x.Apply(context.Background(), Identity{}, &protobufs.TelemetryConnectionSettings{DestinationEndpoint: bad}, nil)
		if err == nil || !strings.Contains(err.Error(), "own metrics") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
