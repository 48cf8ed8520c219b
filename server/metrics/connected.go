package metrics

import "github.com/prometheus/client_golang/prometheus"

var connectedDesc = prometheus.NewDesc("myriarch_agents_connected", "Online agents by kind.", []string{"kind"}, nil)

type connectedCollector struct{ fn func() map[string]int }

func (c *connectedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- connectedDesc }

func (c *connectedCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.fn()
	for _, k := range []string{"collector", "updater", "bridge", "unknown"} {
		ch <- prometheus.MustNewConstMetric(connectedDesc, prometheus.GaugeValue, float64(counts[k]), k)
	}
}
