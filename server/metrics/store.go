package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StorePool is what the store's connection pool counts (PostgreSQL).
type StorePool struct {
	// Acquired and Idle are the connections in use and ready now; Max
	// bounds them together.
	Acquired, Idle, Max int32
	// Acquires counts the connections taken; Waited those taken only after
	// waiting for one to come free (or be opened), for Wait in all.
	Acquires, Waited int64
	Wait             time.Duration
}

var (
	storeConnsDesc = prometheus.NewDesc("myriarch_store_connections",
		"The store's connections by state (acquired: in use; idle: ready).", []string{"state"}, nil)
	storeMaxDesc = prometheus.NewDesc("myriarch_store_connections_max",
		"The most connections the store opens.", nil, nil)
	storeAcquiresDesc = prometheus.NewDesc("myriarch_store_acquires_total",
		"Connections taken from the store's pool.", nil, nil)
	storeWaitedDesc = prometheus.NewDesc("myriarch_store_acquires_waited_total",
		"Connections taken from the store's pool only after waiting for one.", nil, nil)
	storeWaitDesc = prometheus.NewDesc("myriarch_store_acquire_wait_seconds_total",
		"Time spent waiting for a connection of the store's pool.", nil, nil)
)

type storeCollector struct{ fn func() StorePool }

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{storeConnsDesc, storeMaxDesc, storeAcquiresDesc, storeWaitedDesc, storeWaitDesc} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.fn()
	ch <- prometheus.MustNewConstMetric(storeConnsDesc, prometheus.GaugeValue, float64(p.Acquired), "acquired")
	ch <- prometheus.MustNewConstMetric(storeConnsDesc, prometheus.GaugeValue, float64(p.Idle), "idle")
	ch <- prometheus.MustNewConstMetric(storeMaxDesc, prometheus.GaugeValue, float64(p.Max))
	ch <- prometheus.MustNewConstMetric(storeAcquiresDesc, prometheus.CounterValue, float64(p.Acquires))
	ch <- prometheus.MustNewConstMetric(storeWaitedDesc, prometheus.CounterValue, float64(p.Waited))
	ch <- prometheus.MustNewConstMetric(storeWaitDesc, prometheus.CounterValue, p.Wait.Seconds())
}
