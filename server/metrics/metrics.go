// Package metrics exposes myriarchd's Prometheus metrics on a private registry.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the server's instruments.
type Metrics struct {
	reg      *prometheus.Registry
	messages prometheus.Counter
	rejects  *prometheus.CounterVec
}

// New creates the instruments. connected is sampled at scrape time and
// returns online agents by kind.
func New(connected func() map[string]int) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		messages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "myriarch_opamp_messages_total", Help: "OpAMP messages received from agents.",
		}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "myriarch_opamp_rejects_total", Help: "Refused connections and messages, by reason.",
		}, []string{"reason"}),
	}
	m.reg.MustRegister(m.messages, m.rejects, &connectedCollector{fn: connected},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Message counts one received message.
func (m *Metrics) Message() { m.messages.Inc() }

// Reject counts one refusal.
func (m *Metrics) Reject(reason string) { m.rejects.WithLabelValues(reason).Inc() }

// Handler serves the text exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

var connectedDesc = prometheus.NewDesc("myriarch_agents_connected", "Online agents by kind.", []string{"kind"}, nil)

type connectedCollector struct{ fn func() map[string]int }

func (c *connectedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- connectedDesc }

func (c *connectedCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.fn()
	for _, k := range []string{"collector", "updater", "bridge", "unknown"} {
		ch <- prometheus.MustNewConstMetric(connectedDesc, prometheus.GaugeValue, float64(counts[k]), k)
	}
}
