package rollout

import "github.com/myriarch/myriarch/server/estate"

// Gauge is one fleet's rollout as the metrics show it.
type Gauge struct {
	Fleet  string
	Paused bool
	// Failures are those since the last resume (State.Spent).
	Failures int
	Waves    []WaveGauge
}

// WaveGauge is one wave of a Gauge: its members, those done and not
// failed, and those failed.
type WaveGauge struct {
	Wave                  string
	Members, Done, Failed int
}

// GaugeOf shows the rollout of def in state s with members counted by w;
// failed says which member states are failures.
func GaugeOf(def estate.Fleet, s State, w *Waves, failed func(state string) bool) Gauge {
	g := Gauge{Fleet: def.Name, Paused: s.Paused, Failures: s.Spent()}
	for i, row := range Rows(def, w) {
		wg := WaveGauge{Wave: row.Wave, Members: row.Total}
		for st, n := range w.Counts(i) {
			if failed(st) {
				wg.Failed += n
			}
		}
		wg.Done = w.Done(i) - wg.Failed
		g.Waves = append(g.Waves, wg)
	}
	return g
}
