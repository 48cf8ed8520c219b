package offers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/store"
)

// fleet is a fleet definition with its rollout progress.
type fleet struct {
	def     estate.Fleet
	members map[uuid.UUID]struct{}
	// counts[wave][state] over members; wave len(Waves) holds agents without a listed wave.
	counts []map[string]int
	rollout
	dirty bool
}

// rollout is a fleet's persisted rollout state, kept per target version.
type rollout struct {
	Target   string `json:"targetVersion"`
	Paused   bool   `json:"paused"`
	Failures int    `json:"failures"`
	// Baseline is the failure count at the last resume: pausing compares
	// failures since then with maxFailures.
	Baseline int `json:"baseline"`
	// Manual marks a pause an operator asked for (not too many failures).
	Manual bool `json:"manual,omitempty"`
}

const rolloutKey = "rollout/"

func (e *Engine) loadFleetStates(ctx context.Context) error {
	m, err := e.state.ListState(ctx, rolloutKey)
	if err != nil {
		return err
	}
	for k, v := range m {
		var r rollout
		if json.Unmarshal(v, &r) != nil {
			continue
		}
		name := strings.TrimPrefix(k, rolloutKey)
		e.fleets[name] = &fleet{def: estate.Fleet{Name: name}, members: map[uuid.UUID]struct{}{}, rollout: r}
	}
	return nil
}

func (f *fleet) groups() int {
	if f.def.Rollout == nil {
		return 1
	}
	return len(f.def.Rollout.Waves) + 1
}

// syncFleets reconciles fleet records with the estate; caller holds e.mu.
func (e *Engine) syncFleets() {
	seen := map[string]bool{}
	if e.est != nil {
		for _, def := range e.est.Fleets {
			seen[def.Name] = true
			f := e.fleets[def.Name]
			if f == nil {
				f = &fleet{members: map[uuid.UUID]struct{}{}}
				e.fleets[def.Name] = f
			}
			f.def = def
			if f.Target != def.TargetVersion {
				// A new target starts a new rollout.
				f.rollout = rollout{Target: def.TargetVersion}
				f.dirty = true
			}
			f.counts = make([]map[string]int, f.groups())
			for i := range f.counts {
				f.counts[i] = map[string]int{}
			}
			f.members = map[uuid.UUID]struct{}{}
		}
	}
	for name, f := range e.fleets {
		if !seen[name] {
			if f.def.Package != "" {
				f.dirty = true // forget state of removed fleets
			}
			delete(e.fleets, name)
		}
	}
	// Membership and counts are rebuilt by the full re-evaluation that follows.
	for _, c := range e.collectors {
		c.counted = false
	}
}

func (e *Engine) dirtyFleets() map[string]*rollout {
	out := map[string]*rollout{}
	for name, f := range e.fleets {
		if f.dirty {
			r := f.rollout
			out[name] = &r
			f.dirty = false
		}
	}
	return out
}

// saveFleets persists rollout states outside the engine lock.
func (e *Engine) saveFleets(dirty map[string]*rollout) {
	for name, r := range dirty {
		b, _ := json.Marshal(r)
		if err := e.state.PutState(context.Background(), rolloutKey+name, b); err != nil && !errors.Is(err, store.ErrNotFound) {
			e.log.Error("persisting rollout state failed", "fleet", name, "err", err)
		}
	}
}

// count adds a collector's state to its fleet's wave counts.
func (e *Engine) count(c *collector) {
	e.uncount(c)
	f := e.fleets[c.fleet]
	if f == nil || c.state == "" {
		return
	}
	f.members[c.uid] = struct{}{}
	if c.wave < len(f.counts) {
		f.counts[c.wave][c.state]++
	}
	c.counted, c.countFl, c.countWv, c.countSt = true, c.fleet, c.wave, c.state
}

func (e *Engine) uncount(c *collector) {
	if !c.counted {
		return
	}
	if f := e.fleets[c.countFl]; f != nil {
		delete(f.members, c.uid)
		if c.countWv < len(f.counts) {
			f.counts[c.countWv][c.countSt]--
		}
	}
	c.counted = false
}

func done(m map[string]int) int { return m[UpToDate] + m[Failed] }

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// gateOpen reports whether agents of wave w may be offered: every agent of
// earlier waves is up to date or failed.
func (f *fleet) gateOpen(w int) bool {
	for j := 0; j < w && j < len(f.counts); j++ {
		if done(f.counts[j]) != total(f.counts[j]) {
			return false
		}
	}
	return true
}

// firstOpenClosed returns the first wave whose gate is closed (len(counts) if none).
func (f *fleet) firstClosed() int {
	for w := 1; w < len(f.counts); w++ {
		if !f.gateOpen(w) {
			return w
		}
	}
	return len(f.counts)
}
