package rollout

import "sync"

// Role is whether an instance decides a rolled-out thing. With several
// instances on one store only the leading one decides (assigns fleets,
// moves members through the waves, counts failures, pauses) and writes
// its decisions; the others follow: they show the leader's records,
// deliver what it decided to the agents connected to them and report what
// those agents say for it. The zero Role follows. Its owner's lock guards
// it.
type Role struct{ leads bool }

// NewRole is the role an instance starts in: leading, unless it shares
// its store with other instances (then it follows until told to lead).
func NewRole(shared bool) Role { return Role{leads: !shared} }

// Leads reports whether the instance decides.
func (r Role) Leads() bool { return r.leads }

// Lead makes the instance decide.
func (r *Role) Lead() { r.leads = true }

// Follow makes the instance stop deciding; it reports whether it led
// (whether what it decided and has not written is to be dropped).
func (r *Role) Follow() bool {
	led := r.leads
	r.leads = false
	return led
}

// StepDown makes the instance stop deciding, under its owner's lock mu;
// when it led, drop runs with mu held to drop what it decided and has not
// written (the next leader decides again from the store).
func (r *Role) StepDown(mu sync.Locker, drop func()) {
	mu.Lock()
	defer mu.Unlock()
	if r.Follow() {
		drop()
	}
}
