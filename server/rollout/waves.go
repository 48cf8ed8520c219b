package rollout

import (
	"iter"
	"maps"

	"github.com/google/uuid"
)

// Waves keeps a fleet's rollout waves: which wave each member is in and
// its state, counted per wave, and which waves are open: wave N+1 opens
// only when every member of waves ≤ N is done. Waves counts members per
// wave by state. It is not safe for concurrent
// use: its owner's lock guards it.
type Waves struct {
	counts  []map[string]int
	members map[uuid.UUID]slot
	done    func(state string) bool
	// states are the states members were put in, numbered as slots hold
	// them: a fleet of 50 000 uses a handful.
	states  []string
	stateNo map[string]uint32
}

// slot is a member's wave and state number: 8 bytes beside its UID in
// the members map, where a wave and a state string took 24.
type slot struct {
	wave  int32
	state uint32
}

// New makes n waves (at least one); done reports whether a member in a
// state no longer holds back later waves.
func New(n int, done func(state string) bool) *Waves {
	w := &Waves{counts: make([]map[string]int, max(n, 1)), members: map[uuid.UUID]slot{}, done: done, stateNo: map[string]uint32{}}
	for i := range w.counts {
		w.counts[i] = map[string]int{}
	}
	return w
}

// Len is the number of waves.
func (w *Waves) Len() int { return len(w.counts) }

// Set puts uid in wave (clamped to the last) with state, replacing what
// it was counted as before.
func (w *Waves) Set(uid uuid.UUID, wave int, state string) {
	wave = min(max(wave, 0), len(w.counts)-1)
	no, ok := w.stateNo[state]
	if !ok {
		no = uint32(len(w.states))
		w.states = append(w.states, state)
		w.stateNo[state] = no
	}
	s := slot{int32(wave), no}
	if old, ok := w.members[uid]; ok {
		if old == s {
			return
		}
		w.uncount(old)
	}
	w.members[uid] = s
	w.counts[wave][state]++
}

// Remove stops counting uid.
func (w *Waves) Remove(uid uuid.UUID) {
	if old, ok := w.members[uid]; ok {
		w.uncount(old)
		delete(w.members, uid)
	}
}

func (w *Waves) uncount(s slot) {
	m, state := w.counts[s.wave], w.states[s.state]
	if m[state]--; m[state] <= 0 {
		delete(m, state)
	}
}

// Has reports whether uid is counted.
func (w *Waves) Has(uid uuid.UUID) bool { _, ok := w.members[uid]; return ok }

// Members iterates over the counted members in no particular order.
func (w *Waves) Members() iter.Seq[uuid.UUID] { return maps.Keys(w.members) }

// MemberSet is every counted member, as a set of agents to evaluate.
func (w *Waves) MemberSet() map[uuid.UUID]struct{} {
	set := make(map[uuid.UUID]struct{}, len(w.members))
	for uid := range w.members {
		set[uid] = struct{}{}
	}
	return set
}

// MembersOf iterates over the members of waves [from, to).
func (w *Waves) MembersOf(from, to int) iter.Seq[uuid.UUID] {
	return func(yield func(uuid.UUID) bool) {
		for uid, s := range w.members {
			if int(s.wave) >= from && int(s.wave) < to && !yield(uid) {
				return
			}
		}
	}
}

// Counts is wave's count per state; the map is the Waves' own, read it only.
func (w *Waves) Counts(wave int) map[string]int { return w.counts[wave] }

// Total is the number of members of wave.
func (w *Waves) Total(wave int) int {
	n := 0
	for _, c := range w.counts[wave] {
		n += c
	}
	return n
}

// Done is the number of members of wave that are done.
func (w *Waves) Done(wave int) int {
	n := 0
	for st, c := range w.counts[wave] {
		if w.done(st) {
			n += c
		}
	}
	return n
}

// GateOpen reports whether members of wave may move: every member of the
// earlier waves is done.
func (w *Waves) GateOpen(wave int) bool {
	for j := 0; j < wave && j < len(w.counts); j++ {
		if w.Done(j) != w.Total(j) {
			return false
		}
	}
	return true
}

// FirstClosed is the first wave whose gate is closed (Len() if none).
func (w *Waves) FirstClosed() int {
	for j := 1; j < len(w.counts); j++ {
		if !w.GateOpen(j) {
			return j
		}
	}
	return len(w.counts)
}

// Complete reports whether every member of every wave is done.
func (w *Waves) Complete() bool {
	for j := range w.counts {
		if w.Done(j) != w.Total(j) {
			return false
		}
	}
	return true
}
