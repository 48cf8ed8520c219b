package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ClusterKind is what an instance did with one kind of the other
// instances' changes (see cluster.KindStats).
type ClusterKind struct {
	Applied, Resyncs, Failed int64
	Busy                     time.Duration
}

// Cluster is an instance's account of the other instances' changes.
type Cluster struct {
	Queued int
	Kinds  map[string]ClusterKind
}

var (
	clusterQueuedDesc = prometheus.NewDesc("myriarch_cluster_changes_queued",
		"Changes of the other instances received and not yet applied.", nil, nil)
	clusterAppliedDesc = prometheus.NewDesc("myriarch_cluster_changes_applied_total",
		"Changes of the other instances applied (a backlog read at once counts one), by kind.", []string{"kind"}, nil)
	clusterResyncsDesc = prometheus.NewDesc("myriarch_cluster_resyncs_total",
		"Full reloads of a kind of the other instances' changes (missed, too many queued, or failed before).", []string{"kind"}, nil)
	clusterFailedDesc = prometheus.NewDesc("myriarch_cluster_apply_failures_total",
		"Changes of the other instances that could not be applied (read again in full later), by kind.", []string{"kind"}, nil)
	clusterBusyDesc = prometheus.NewDesc("myriarch_cluster_apply_seconds_total",
		"Time spent applying the other instances' changes, by kind.", []string{"kind"}, nil)
)

type clusterCollector struct {
	fn    func() Cluster
	kinds []string // reported even at 0; others are not (a kind is a label)
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{clusterQueuedDesc, clusterAppliedDesc, clusterResyncsDesc, clusterFailedDesc, clusterBusyDesc} {
		ch <- d
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.fn()
	ch <- prometheus.MustNewConstMetric(clusterQueuedDesc, prometheus.GaugeValue, float64(st.Queued))
	for _, kind := range c.kinds {
		k := st.Kinds[kind]
		ch <- prometheus.MustNewConstMetric(clusterAppliedDesc, prometheus.CounterValue, float64(k.Applied), kind)
		ch <- prometheus.MustNewConstMetric(clusterResyncsDesc, prometheus.CounterValue, float64(k.Resyncs), kind)
		ch <- prometheus.MustNewConstMetric(clusterFailedDesc, prometheus.CounterValue, float64(k.Failed), kind)
		ch <- prometheus.MustNewConstMetric(clusterBusyDesc, prometheus.CounterValue, k.Busy.Seconds(), kind)
	}
}
