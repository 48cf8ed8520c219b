package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriarch/myriarch/server/rollout"
)

// Fleet metrics: labelled by fleet (and wave), which the estate bounds;
// never by agent.
var (
	configsDesc = prometheus.NewDesc("myriarch_configs",
		"Configured collectors by fleet and sync state (in_sync, pending, failed, drift).", []string{"fleet", "state"}, nil)
	rolloutMembersDesc = prometheus.NewDesc("myriarch_rollout_members",
		"Members of a rollout's wave (rollout: offers or configs).", []string{"rollout", "fleet", "wave"}, nil)
	rolloutDoneDesc = prometheus.NewDesc("myriarch_rollout_done",
		"Members of a rollout's wave where the rollout took them (up to date, in sync).", []string{"rollout", "fleet", "wave"}, nil)
	rolloutFailedDesc = prometheus.NewDesc("myriarch_rollout_failed",
		"Members of a rollout's wave whose offer or configuration failed.", []string{"rollout", "fleet", "wave"}, nil)
	rolloutPausedDesc = prometheus.NewDesc("myriarch_rollout_paused",
		"1 while a fleet's rollout is paused (by an operator or its failure budget).", []string{"rollout", "fleet"}, nil)
	rolloutFailuresDesc = prometheus.NewDesc("myriarch_rollout_failures",
		"Failures a fleet's rollout counted against its maxFailures since it last resumed.", []string{"rollout", "fleet"}, nil)
	telemetryDesc = prometheus.NewDesc("myriarch_telemetry_offers",
		"Agents offered own-telemetry destinations by their fleet, by state (applied, offered, sent, failed, waiting_wave, not_offered).", []string{"state"}, nil)
	keyringDesc = prometheus.NewDesc("myriarch_keyring_updaters",
		"Updaters that take the estate's signed keyring, by state (current, offered, behind, refused, ahead).", []string{"state"}, nil)
	offlineDesc = prometheus.NewDesc("myriarch_agents_offline",
		"Collectors offline for longer than their fleet's offlineAfter, per fleet that sets one.", []string{"fleet"}, nil)
)

// Rollouts are what the rolled-out things show (offers, configs).
type Rollouts map[string]func() []rollout.Gauge

func configsCollector(fn func() map[string]map[string]int) prometheus.Collector {
	return &sampled{descs: []*prometheus.Desc{configsDesc}, collect: func(ch chan<- prometheus.Metric) {
		for fleet, states := range fn() {
			for st, n := range states {
				ch <- gauge(configsDesc, float64(n), fleet, st)
			}
		}
	}}
}

func rolloutsCollector(rs Rollouts) prometheus.Collector {
	return &sampled{descs: []*prometheus.Desc{rolloutMembersDesc, rolloutDoneDesc, rolloutFailedDesc, rolloutPausedDesc, rolloutFailuresDesc},
		collect: func(ch chan<- prometheus.Metric) {
			for what, fn := range rs {
				for _, g := range fn() {
					paused := 0.0
					if g.Paused {
						paused = 1
					}
					ch <- gauge(rolloutPausedDesc, paused, what, g.Fleet)
					ch <- gauge(rolloutFailuresDesc, float64(g.Failures), what, g.Fleet)
					for _, w := range g.Waves {
						ch <- gauge(rolloutMembersDesc, float64(w.Members), what, g.Fleet, w.Wave)
						ch <- gauge(rolloutDoneDesc, float64(w.Done), what, g.Fleet, w.Wave)
						ch <- gauge(rolloutFailedDesc, float64(w.Failed), what, g.Fleet, w.Wave)
					}
				}
			}
		}}
}

func offlineCollector(fn func() map[string]int) prometheus.Collector {
	return &sampled{descs: []*prometheus.Desc{offlineDesc}, collect: func(ch chan<- prometheus.Metric) {
		for fleet, n := range fn() {
			ch <- gauge(offlineDesc, float64(n), fleet)
		}
	}}
}

func telemetryCollector(fn func() map[string]int) prometheus.Collector {
	return &sampled{descs: []*prometheus.Desc{telemetryDesc}, collect: func(ch chan<- prometheus.Metric) {
		for st, n := range fn() {
			ch <- gauge(telemetryDesc, float64(n), st)
		}
	}}
}

func keyringCollector(fn func() map[string]int) prometheus.Collector {
	return &sampled{descs: []*prometheus.Desc{keyringDesc}, collect: func(ch chan<- prometheus.Metric) {
		for st, n := range fn() {
			ch <- gauge(keyringDesc, float64(n), st)
		}
	}}
}
