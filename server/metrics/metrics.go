// Package metrics exposes myriarchd's Prometheus metrics on a private registry.
package metrics

import (
	"net/http"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/myriarch/myriarch/internal/buildinfo"
)

// Sources are what the gauges sample at scrape time. A nil source leaves
// its gauge out.
type Sources struct {
	// Connected returns online agents by kind.
	Connected func() map[string]int
	// Agents calls count once for every registered agent, online or not,
	// with its kind and reported version (see RegistryAgents).
	Agents func(count func(kind, version string))
	// Offers returns collectors by offer state (offers.Engine.StateCounts);
	// a known state missing from it reads 0; nil leaves the gauge out.
	Offers func() map[string]int
	// StorePool samples the store's connection pool (a PostgreSQL store).
	StorePool func() StorePool
	// Cluster samples what the instance did with the other instances'
	// changes, of ClusterKinds (instances sharing a PostgreSQL store).
	Cluster      func() Cluster
	ClusterKinds []string
	// ConfigWarnings returns the configurations' warnings by kind
	// (configs.Engine.WarningCounts); nil leaves the gauge out.
	ConfigWarnings func() map[string]int
	// Ready reports whether the instance is ready (GET /readyz).
	Ready func() bool
	// Configs counts configured collectors by fleet and sync state.
	Configs func() map[string]map[string]int
	// Rollouts shows the rollouts of each rolled-out thing.
	Rollouts Rollouts
	// Offline counts collectors offline longer than their fleet's
	// offlineAfter, per fleet that sets one.
	Offline func() map[string]int
	// Telemetry counts the agents offered own-telemetry destinations by
	// state (telemetry.Engine.StateCounts).
	Telemetry func() map[string]int
	// Keyring counts the updaters that take the estate's keyring by state
	// (server/keyrings).
	Keyring func() map[string]int
	// Notifications samples the notifier (nil: none).
	Notifications *Notifications
}

// Metrics holds the server's instruments.
type Metrics struct {
	reg      *prometheus.Registry
	messages prometheus.Counter
	rejects  *prometheus.CounterVec
	replaced prometheus.Counter
}

// New creates the instruments.
func New(src Sources) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		messages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "myriarch_opamp_messages_total", Help: "OpAMP messages received from agents.",
		}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "myriarch_opamp_rejects_total", Help: "Refused connections and messages, by reason.",
		}, []string{"reason"}),
		replaced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "myriarch_opamp_connections_replaced_total",
			Help: "Agent WebSocket connections closed because a newer one with the same instance UID and credential arrived.",
		}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "myriarch_build_info",
		Help:        "The running myriarchd's version and Go version (always 1).",
		ConstLabels: prometheus.Labels{"version": buildinfo.Version, "goversion": runtime.Version()},
	})
	build.Set(1)
	m.reg.MustRegister(m.messages, m.rejects, m.replaced, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if src.Connected != nil {
		m.reg.MustRegister(&connectedCollector{fn: src.Connected})
	}
	if src.Agents != nil {
		m.reg.MustRegister(&agentsCollector{each: src.Agents})
	}
	if src.Offers != nil {
		m.reg.MustRegister(&offersCollector{fn: src.Offers})
	}
	if src.StorePool != nil {
		m.reg.MustRegister(&storeCollector{fn: src.StorePool})
	}
	if src.Cluster != nil {
		m.reg.MustRegister(&clusterCollector{fn: src.Cluster, kinds: src.ClusterKinds})
	}
	if src.ConfigWarnings != nil {
		m.reg.MustRegister(&configWarningsCollector{fn: src.ConfigWarnings})
	}
	if src.Ready != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "myriarch_ready",
			Help: "1 while the instance is ready (GET /readyz answers 200), else 0."}, func() float64 {
			if src.Ready() {
				return 1
			}
			return 0
		}))
	}
	if src.Configs != nil {
		m.reg.MustRegister(configsCollector(src.Configs))
	}
	if len(src.Rollouts) > 0 {
		m.reg.MustRegister(rolloutsCollector(src.Rollouts))
	}
	if src.Offline != nil {
		m.reg.MustRegister(offlineCollector(src.Offline))
	}
	if src.Keyring != nil {
		m.reg.MustRegister(keyringCollector(src.Keyring))
	}
	if src.Telemetry != nil {
		m.reg.MustRegister(telemetryCollector(src.Telemetry))
	}
	if src.Notifications != nil {
		m.reg.MustRegister(notificationsCollector(*src.Notifications))
	}
	return m
}

// Message counts one received message.
func (m *Metrics) Message() { m.messages.Inc() }

// Reject counts one refusal.
func (m *Metrics) Reject(reason string) { m.rejects.WithLabelValues(reason).Inc() }

// Replaced counts one replaced agent connection.
func (m *Metrics) Replaced() { m.replaced.Inc() }

// Handler serves the text exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
