package metrics

import "github.com/prometheus/client_golang/prometheus"

// sampled is a collector whose metrics are sampled at scrape time by
// collect, each of one of descs.
type sampled struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (c *sampled) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *sampled) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	for i, l := range labels {
		labels[i] = validUTF8(l)
	}
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	for i, l := range labels {
		labels[i] = validUTF8(l)
	}
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}
