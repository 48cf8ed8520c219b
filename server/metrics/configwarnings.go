package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriarch/myriarch/internal/configrender"
)

var configWarningsDesc = prometheus.NewDesc("myriarchd_config_warnings",
	"What the collectors' configurations leave out (dropped receivers), by kind, across every configured collector.", []string{"kind"}, nil)

type configWarningsCollector struct{ fn func() map[string]int }

func (c *configWarningsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- configWarningsDesc }

func (c *configWarningsCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.fn()
	if counts == nil { // no configuration engine yet
		return
	}
	if _, ok := counts[configrender.WarningReceiverDropped]; !ok {
		ch <- prometheus.MustNewConstMetric(configWarningsDesc, prometheus.GaugeValue, 0, configrender.WarningReceiverDropped)
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(configWarningsDesc, prometheus.GaugeValue, float64(n), validUTF8(k))
	}
}
