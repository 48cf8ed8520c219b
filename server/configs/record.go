package configs

import (
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/registry"
)

// Sync states, evaluated in this order.
const (
	SyncNone    = "none"
	SyncFailed  = "failed"
	SyncDrift   = "drift"
	SyncInSync  = "in_sync"
	SyncPending = "pending"
)

// Reported statuses, as the agent's RemoteConfigStatus names them.
const (
	StatusUnset    = "unset"
	StatusApplying = "applying"
	StatusApplied  = "applied"
	StatusFailed   = "failed"
)

// maxFailed bounds the failed hashes kept per agent (the oldest go first).
const maxFailed = 16

// reported is what the agent last said about its remote configuration.
type reported struct {
	Hash   string `json:"hash,omitempty"`
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// record is the engine's state of one agent, guarded by Engine.mu. What
// every agent has is here; what only an agent with a configuration (or
// reports of one) has is in its detail, which the records of the other
// agents share (noDetail): read through the embedded pointer, written
// through own, given back by shed once all zero.
type record struct {
	uid       uuid.UUID
	kind      registry.Kind
	view      attributes.View
	accepts   bool
	online    bool
	connected bool // over a WebSocket: sent at once, not in an answer
	wave      int32
	firstSeen stamp.Stamp
	fleet     string
	// effective is the hash of the configuration the agent last reported
	// running (every collector under a Supervisor reports one).
	effective string

	// countedIn is the fleet whose wave counts hold the record.
	countedIn string

	// reportAt is when the last report applied was received (see
	// ApplyReports); observed is what was last reported for the leader
	// (nil: nothing, as for the agents connected to other instances).
	reportAt stamp.Stamp
	observed *observed

	// tr is what is followed of the agent applying a configuration (nil
	// while there is nothing: most agents, most of the time).
	tr *tracking

	*detail
}

// detail is the part of a record that an agent without a configuration
// does without.
type detail struct {
	blueprint string
	// input identifies what the assigned hash (or the render error) was
	// computed from: the template's source and the context's key.
	input    string
	revision string // the estate revision whose render produced assigned
	assigned string
	desired  string
	failed   []string // newest last
	applied  string   // the last hash this server sent that the agent reported APPLIED
	reported reported
	err      string // the render error, shown as assignment.error
	source   string // where the render's context came from
	// failedWhy is why the newest failed hash failed: the agent's FAILED
	// message, or the timeout that failed it without one.
	failedWhy string
	// warnings are what the render of assigned left out (shared with the
	// records of the same render).
	warnings []configrender.Warning

	sentHash string
	sentAt   stamp.Stamp

	// With instances sharing a store, failing is a hash the agent
	// connected here reported failing that the leader has not yet recorded
	// failed (never sent again meanwhile), failingSeen whether the
	// leader's failed hashes named it since; stuckWhy why failing was
	// found stuck here ("": reported FAILED).
	failing     string
	failingSeen bool
	stuckWhy    string
}

// noDetail is the detail of every record that has none of its own. It is
// never written: writes go through own.
var noDetail = &detail{}

func newRecord(uid uuid.UUID) *record { return &record{uid: uid, detail: noDetail} }

// own returns r's detail to write, its own from then on.
func (r *record) own() *detail {
	if r.detail == noDetail {
		r.detail = &detail{}
	}
	return r.detail
}

// shed gives r's detail back once it holds nothing.
func (r *record) shed() {
	if d := r.detail; d != noDetail && d.zero() {
		r.detail = noDetail
	}
}

// sendAgain has the desired configuration sent again.
func (r *record) sendAgain() {
	if r.sentHash != "" {
		r.own().sentHash = ""
	}
}

// clearFailing forgets a hash the agent reported failing here.
func (r *record) clearFailing() {
	if r.failing != "" || r.failingSeen || r.stuckWhy != "" {
		d := r.own()
		d.failing, d.failingSeen, d.stuckWhy = "", false, ""
	}
}

func (d *detail) zero() bool {
	return d.blueprint == "" && d.input == "" && d.revision == "" && d.assigned == "" && d.desired == "" &&
		len(d.failed) == 0 && d.applied == "" && d.reported == (reported{}) && d.err == "" &&
		d.source == "" && d.sentHash == "" && d.sentAt.IsZero() && d.failing == "" && !d.failingSeen && d.stuckWhy == "" &&
		len(d.warnings) == 0 && d.failedWhy == ""
}

// tracking is what is followed of an agent applying a configuration:
// applyingSince is when the agent was first seen APPLYING its reported
// hash, unhealthySince when it last turned unhealthy (zero while healthy),
// healthErr its last health error: together they tell a configuration the
// agent is stuck on. effectiveMissing is what the last effective
// configuration lacked of the desired configuration effectiveOf;
// notEffectiveNoted the desired hash that was last found missing (sent
// again once at once).
type tracking struct {
	effectiveOf       string
	effectiveMissing  []string
	notEffectiveNoted string

	applyingSince  time.Time
	unhealthySince time.Time
	healthErr      string
}

// tracking returns what is followed of r, zero when nothing is; track
// returns it to change, held from then on until untrack finds it empty.
func (r *record) tracking() tracking {
	if r.tr == nil {
		return tracking{}
	}
	return *r.tr
}

func (r *record) track() *tracking {
	if r.tr == nil {
		r.tr = &tracking{}
	}
	return r.tr
}

// untrack drops what is followed of r once it is all zero.
func (r *record) untrack() {
	if r.tr != nil && r.tr.effectiveOf == "" && len(r.tr.effectiveMissing) == 0 && r.tr.notEffectiveNoted == "" &&
		r.tr.applyingSince.IsZero() && r.tr.unhealthySince.IsZero() && r.tr.healthErr == "" {
		r.tr = nil
	}
}

// lastObserved is what was last reported of r for the leader.
func (r *record) lastObserved() observed {
	if r.observed == nil {
		return observed{}
	}
	return *r.observed
}

// persisted is the stored form of a record.
type persisted struct {
	persistedFields
	Failed   []string               `json:"failed,omitempty"`
	Warnings []configrender.Warning `json:"warnings,omitempty"`
}

// persistedFields are the comparable fields of persisted.
type persistedFields struct {
	Fleet     string   `json:"fleet,omitempty"`
	Blueprint string   `json:"blueprint,omitempty"`
	Input     string   `json:"input,omitempty"`
	Revision  string   `json:"revision,omitempty"`
	Assigned  string   `json:"assigned,omitempty"`
	Desired   string   `json:"desired,omitempty"`
	Applied   string   `json:"applied,omitempty"`
	Reported  reported `json:"reported"`
	Effective string   `json:"effective,omitempty"`
	Error     string   `json:"error,omitempty"`
	FailedWhy string   `json:"failedWhy,omitempty"`
	// Source is where the render's context came from; Wave the agent's
	// wave in its fleet; ReportAt when the last report applied was
	// received (Unix ns): what the instances sharing a store need of a
	// record besides.
	Source   string `json:"source,omitempty"`
	Wave     int    `json:"wave,omitempty"`
	ReportAt int64  `json:"reportAt,omitempty"`
}

func (p persisted) equal(q persisted) bool {
	return p.persistedFields == q.persistedFields && slices.Equal(p.Failed, q.Failed) && slices.Equal(p.Warnings, q.Warnings)
}

func (r *record) persisted() persisted {
	p := persisted{persistedFields: persistedFields{Fleet: r.fleet, Blueprint: r.blueprint, Input: r.input, Revision: r.revision,
		Assigned: r.assigned, Desired: r.desired, Applied: r.applied,
		Reported: r.reported, Effective: r.effective, Error: r.err, FailedWhy: r.failedWhy, Source: r.source, Wave: int(r.wave)}, Failed: slices.Clone(r.failed),
		Warnings: r.warnings}
	if !r.reportAt.IsZero() {
		p.ReportAt = int64(r.reportAt)
	}
	return p
}

func (r *record) restore(p persisted) {
	r.restoreDecided(p)
	d := *r.detail
	d.reported = p.Reported
	r.setDetail(d)
	r.effective = p.Effective
}

// restoreDecided sets what the engine decided of p, not what the agent
// reported.
func (r *record) restoreDecided(p persisted) {
	d := *r.detail
	d.blueprint, d.input, d.revision = p.Blueprint, p.Input, p.Revision
	d.assigned, d.desired, d.failed, d.applied = p.Assigned, p.Desired, p.Failed, p.Applied
	d.err, d.source, d.warnings, d.failedWhy = p.Error, p.Source, p.Warnings, p.FailedWhy
	r.setDetail(d)
	r.fleet, r.wave = p.Fleet, int32(p.Wave)
	r.reportAt = 0
	if p.ReportAt > 0 {
		r.reportAt = stamp.Stamp(p.ReportAt)
	}
}

// setDetail makes d r's detail.
func (r *record) setDetail(d detail) {
	switch {
	case d.zero():
		r.detail = noDetail
	case r.detail == noDetail:
		nd := new(detail)
		*nd = d
		r.detail = nd
	default:
		*r.detail = d
	}
}

// notEffective reports whether the agent says it applied the desired
// configuration while its effective configuration lacks part of it.
func (r *record) notEffective() bool {
	tr := r.tracking()
	return tr.effectiveOf == r.desired && r.desired != "" && len(tr.effectiveMissing) > 0 &&
		r.reported.Hash == r.desired && r.reported.Status == StatusApplied
}

// owns reports whether h names a configuration of this agent's own: its
// assigned or desired hash, the one last sent to it, the last it applied
// of those sent, or one it failed. The hash it last reported counts only
// as one of these: an agent may report any hash, another agent's too.
func (r *record) owns(h string) bool {
	return h != "" && (h == r.assigned || h == r.desired || h == r.sentHash || h == r.applied ||
		h == r.failing || r.isFailed(h))
}

func (r *record) isFailed(h string) bool { return h != "" && slices.Contains(r.failed, h) }

// addFailed records h as failed, keeping at most maxFailed hashes.
func (r *record) addFailed(h string) {
	if r.isFailed(h) {
		return
	}
	d := r.own()
	d.failed = append(d.failed, h)
	if len(d.failed) > maxFailed {
		d.failed = slices.Clone(d.failed[len(d.failed)-maxFailed:])
	}
}

// syncState derives the sync state: "failed" when the desired
// configuration failed (the agent reported FAILED for it, or it stayed
// unhealthy applying it: failedWhy says which), "drift" when desired
// differs from assigned — a rollout that has not reached the agent, or a
// rollback to the last applied configuration after the assigned one
// failed (assignment.failed and failedReason keep the failure).
func (r *record) syncState() string {
	switch {
	case r.assigned == "":
		return SyncNone
	case r.desired != "" && (r.isFailed(r.desired) || r.reported.Status == StatusFailed && r.reported.Hash == r.desired && !interrupted(r.reported)):
		return SyncFailed
	case r.desired != r.assigned:
		return SyncDrift
	case r.reported.Hash == r.desired && r.reported.Status == StatusApplied && !r.notEffective():
		return SyncInSync
	default:
		return SyncPending
	}
}

// waveRolledBack is the state a fleet's waves count an agent in when it
// was rolled back from its failed assigned configuration: drift to the
// sync state, but done for the waves (a failure of the rollout, which the
// failure budget governs, not a member it has yet to reach).
const waveRolledBack = "rolled_back"

// waveState is the state the fleet's waves count r in.
func (r *record) waveState() string {
	st := r.syncState()
	if st == SyncDrift && r.isFailed(r.assigned) {
		return waveRolledBack
	}
	return st
}

// failedHash is the failed hash the assignment shows: the assigned one when
// it failed, otherwise the newest.
func (r *record) failedHash() string {
	if r.isFailed(r.assigned) {
		return r.assigned
	}
	if len(r.failed) > 0 {
		return r.failed[len(r.failed)-1]
	}
	return ""
}
