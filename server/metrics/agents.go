package metrics

import (
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriarch/myriarch/server/registry"
)

var agentsDesc = prometheus.NewDesc("myriarch_agents",
	"Registered agents, online or not, by kind and reported version (service.version; empty when not reported).",
	[]string{"kind", "version"}, nil)

// maxAgentSeries bounds the kind/version pairs one scrape reports, so agents
// reporting arbitrary versions cannot swell the scrape; agents past the
// bound are counted under version "other".
const maxAgentSeries = 1000

const otherVersion = "other"

type agentKey struct{ kind, version string }

type agentsCollector struct {
	each func(count func(kind, version string))
}

func (c *agentsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- agentsDesc }

// Collect counts the agents in one pass; the only allocations are the
// counting map's, one entry per kind/version pair.
func (c *agentsCollector) Collect(ch chan<- prometheus.Metric) {
	counts := make(map[agentKey]int, 64)
	c.each(func(kind, version string) {
		k := agentKey{kind, version}
		if _, ok := counts[k]; !ok && len(counts) >= maxAgentSeries {
			k.version = otherVersion
		}
		counts[k]++
	})
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(agentsDesc, prometheus.GaugeValue, float64(n), validUTF8(k.kind), validUTF8(k.version))
	}
}

// validUTF8 keeps a label value acceptable to the exposition format.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// RegistryAgents counts every agent of reg with its kind and its
// service.version, the version the admin API and `myriarchd agents list`
// show, in one pass under the registry's read lock.
func RegistryAgents(reg *registry.Registry) func(count func(kind, version string)) {
	return func(count func(kind, version string)) {
		reg.EachKindVersion(func(kind registry.Kind, version string) { count(string(kind), version) })
	}
}
