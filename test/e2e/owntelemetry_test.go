package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	resource "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

// otlpSink is an OTLP/HTTP receiver (protobuf from the collector, JSON
// from the updater) keeping, per service.instance.id, the metric names and
// log bodies it was sent and when it was last sent anything.
type otlpSink struct {
	mu      sync.Mutex
	metrics map[string]map[string]bool // instance -> metric names; guarded by mu
	logs    map[string]int             // instance -> log records; guarded by mu
	times   map[string][]time.Time     // instance -> metric requests; guarded by mu
	last    map[string]time.Time       // instance -> last request; guarded by mu
	bad     []string                   // guarded by mu
}

func newOTLPSink() *otlpSink {
	return &otlpSink{metrics: map[string]map[string]bool{}, logs: map[string]int{}, times: map[string][]time.Time{}, last: map[string]time.Time{}}
}

func instanceOf(r *resource.Resource) string {
	for _, kv := range r.GetAttributes() {
		if kv.GetKey() == "service.instance.id" {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	unmarshal := proto.Unmarshal
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		unmarshal = protojson.Unmarshal
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/v1/metrics":
		var m colmetrics.ExportMetricsServiceRequest
		if err := unmarshal(body, &m); err != nil {
			s.bad = append(s.bad, fmt.Sprintf("metrics (%s): %v", r.Header.Get("Content-Type"), err))
			break
		}
		for _, rm := range m.GetResourceMetrics() {
			id := instanceOf(rm.GetResource())
			if s.metrics[id] == nil {
				s.metrics[id] = map[string]bool{}
			}
			for _, sm := range rm.GetScopeMetrics() {
				for _, x := range sm.GetMetrics() {
					s.metrics[id][x.GetName()] = true
				}
			}
			s.times[id] = append(s.times[id], now)
			s.last[id] = now
		}
	case "/v1/logs":
		var l collogs.ExportLogsServiceRequest
		if err := unmarshal(body, &l); err != nil {
			s.bad = append(s.bad, fmt.Sprintf("logs (%s): %v", r.Header.Get("Content-Type"), err))
			break
		}
		for _, rl := range l.GetResourceLogs() {
			id := instanceOf(rl.GetResource())
			for _, sl := range rl.GetScopeLogs() {
				s.logs[id] += len(sl.GetLogRecords())
			}
			s.last[id] = now
		}
	default:
		s.bad = append(s.bad, "unexpected path "+r.URL.Path)
	}
	w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
}

func (s *otlpSink) has(id, metric string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metrics[id][metric]
}

// A fleet names an OTLP sink as its telemetry destination: the real
// Supervisor's collector sends its own metrics and logs there, and so does
// the updater, each with its instance UID as service.instance.id; once the
// fleet drops the section, both stop.
func TestOwnTelemetryReachesTheFleetsDestination(t *testing.T) {
	t.Parallel()
	sink := newOTLPSink()
	srv := httptest.NewServer(sink)
	defer srv.Close()
	e := newEnv(t)
	// One export a second instead of a minute.
	e.ownTelemetry = true
	e.collectorEnv = map[string]string{"OTEL_METRIC_EXPORT_INTERVAL": "1000"}
	e.updaterEnv = append(os.Environ(), "OTEL_METRIC_EXPORT_INTERVAL=1000")
	e.install(peerbuild.VersionM1)
	e.waitCollector("linked", 90*time.Second, func(a site.Agent) bool { return a.Pairing.State == "linked" })
	upd := e.updaterAgent(30 * time.Second)

	telemetry := fmt.Sprintf("telemetry:\n  metrics: {endpoint: \"%s/v1/metrics\"}\n  logs: {endpoint: \"%s\"}\n", srv.URL, srv.URL)
	if err := site.SetFleet(e.estate, "edge", peerbuild.VersionM1, map[string]string{"site.type": "edge"}, telemetry); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, 2*time.Minute, "the collector's and the updater's own metrics at the sink", func() bool {
		return sink.has(e.colUID, "otelcol_process_uptime") && sink.has(upd.InstanceUID, "myriarch.updater.downloads")
	})
	testkit.WaitWithin(t, time.Minute, "the collector's own logs, and a second metrics export", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return sink.logs[e.colUID] > 0 && len(sink.times[e.colUID]) >= 2 && len(sink.times[upd.InstanceUID]) >= 2
	})
	sink.mu.Lock()
	ts := sink.times[e.colUID]
	every := ts[len(ts)-1].Sub(ts[len(ts)-2])
	bad := sink.bad
	sink.mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("the sink refused: %v", bad)
	}

	// The fleet drops the section: both stop (after the collector's last
	// flush at its restart), silent for several export intervals.
	if err := site.SetFleet(e.estate, "edge", peerbuild.VersionM1, map[string]string{"site.type": "edge"}); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	quiet := max(5*every, 5*time.Second)
	testkit.WaitWithin(t, 2*time.Minute+quiet, fmt.Sprintf("no own telemetry for %s", quiet), func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return time.Since(sink.last[e.colUID]) > quiet && time.Since(sink.last[upd.InstanceUID]) > quiet
	})
}
