package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriarch/myriarch/server/offers"
)

var offersDesc = prometheus.NewDesc("myriarch_offers",
	"Collectors assigned to a fleet, by offer state.", []string{"state"}, nil)

// offerStates are reported even when no collector is in them, so a state
// reads 0 rather than disappearing.
var offerStates = []string{
	offers.UpToDate, offers.WaitingWave, offers.Offered, offers.Downloading, offers.Installing,
	offers.Installed, offers.Failed, offers.HeldAmbiguous, offers.NoUpdater, offers.NoArtifact, offers.Paused, offers.NotOffered,
}

type offersCollector struct{ fn func() map[string]int }

func (c *offersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- offersDesc }

func (c *offersCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.fn()
	if counts == nil { // no offers engine yet
		return
	}
	for _, st := range offerStates {
		if _, ok := counts[st]; !ok {
			ch <- prometheus.MustNewConstMetric(offersDesc, prometheus.GaugeValue, 0, st)
		}
	}
	for st, n := range counts {
		ch <- prometheus.MustNewConstMetric(offersDesc, prometheus.GaugeValue, float64(n), validUTF8(st))
	}
}
