package offers

import (
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/pairing"
	"github.com/myriarch/myriarch/server/rollout"
)

// evaluateLocked recomputes the given collectors, and then those whose wave gate
// opened as a consequence; caller holds e.mu.
func (e *Engine) evaluateLocked(work map[uuid.UUID]struct{}) {
	for len(work) > 0 {
		// Deterministic order keeps events and tests stable.
		keys := make([]uuid.UUID, 0, len(work))
		for k := range work {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return string(keys[i][:]) < string(keys[j][:]) })
		gates := rollout.Gates{}
		for _, uid := range keys {
			c, ok := e.collectors[uid]
			if !ok {
				continue
			}
			gates.Note(e.wavesLocked(c.fleet))
			e.evalOneLocked(c)
			gates.Note(e.wavesLocked(c.fleet))
		}
		next := map[uuid.UUID]struct{}{}
		for m := range gates.Opened() {
			next[m] = struct{}{}
		}
		work = next
	}
}

// assignLocked picks the collector's fleet: the highest-priority match; a tie at
// the top is an assignment error.
func (e *Engine) assignLocked(c *collector) *fleet {
	c.fleet, c.target, c.wave = "", "", 0
	c.setAssign("")
	if e.est == nil {
		return nil
	}
	def, err := e.est.FleetFor(c.view)
	if def == nil {
		return nil
	}
	c.fleet = def.Name
	switch {
	case err != nil:
		c.setAssign(err.Error())
		return nil
	case def.Package == "":
		return nil // the fleet only configures its collectors
	}
	c.target, c.wave = def.TargetVersion, int32(def.WaveOf(c.view))
	return e.fleets[def.Name]
}

func (e *Engine) evalOneLocked(c *collector) {
	prevState, prevErr := c.state, c.err
	prev := c.decision()
	f := e.assignLocked(c)
	u := e.linkedUpdaterLocked(c)
	state, errMsg := e.decideLocked(c, f, u)
	c.state = state
	c.setErr(errMsg)
	if state != Downloading {
		c.setProgress(nil)
	}
	if state == "" || state == UpToDate || state == Failed || state == NotOffered {
		if u != nil {
			delete(e.desired, u.uid)
		}
	}
	e.countLocked(c)
	if prevState != c.state || prevErr != c.err {
		c.updated = stamp.Of(e.opts.Now())
		// A failure an updater reported is recorded where its report came
		// in (packageStatusesLocked); an instance that learns it from the
		// shared state does not record it again: it is said once.
		if !(c.state == Failed && c.failed[hex.EncodeToString([]byte(c.hash))]) {
			e.transitionEventLocked(c, prevState)
		}
		e.persistLocked(c)
	} else if !c.decisionIs(prev) {
		e.persistLocked(c)
	}
	c.shed()
}

// decideLocked returns the offer state for a collector and queues an offer when
// one is due.
func (e *Engine) decideLocked(c *collector, f *fleet, u *updater) (string, string) {
	if f == nil {
		return "", ""
	}
	cur, err := e.versionLocked(c.version)
	if err != nil {
		return NotOffered, fmt.Sprintf("collector reports service.version %q, which is not a version", c.version)
	}
	tgt, err := e.versionLocked(f.def.TargetVersion)
	if err != nil {
		return NotOffered, fmt.Sprintf("fleet %s targetVersion %q is not a version", f.def.Name, f.def.TargetVersion)
	}
	if cur.Equal(tgt) {
		return UpToDate, ""
	}
	ps, _ := e.ix.Collector(c.uid)
	switch {
	case ps.State == pairing.Ambiguous:
		return HeldAmbiguous, "more than one online updater claims this collector: " + uidList(ps.Claimants)
	case ps.State != pairing.Linked || u == nil:
		return NoUpdater, ""
	}
	pv := e.catalogLocked(f.def.Package, f.def.TargetVersion)
	if pv == nil {
		return NoArtifact, fmt.Sprintf("package %s %s is not in the catalog", f.def.Package, f.def.TargetVersion)
	}
	pas, hash, why := e.offerForLocked(c, pv, u)
	if pas == nil {
		return NoArtifact, why
	}
	if content := pas.Packages[pv.Name].GetFile().GetContentHash(); c.hash == string(hash) && c.content != string(content) {
		// The content hash is not persisted: restore it after a restart.
		c.setOffer(e.specLocked(c.pkg, c.offerVer, []byte(c.hash), content, c.offer), c.to)
	}
	hexHash := hex.EncodeToString(hash)
	inFlight := c.hash == string(hash) &&
		(c.state == Offered || c.state == Downloading || c.state == Installing || c.state == Installed)
	switch {
	case c.failed[hexHash]:
		return Failed, c.errOr("this offer failed before; POST /api/v1/agents/" + c.uid.String() + "/retry to offer it again")
	case inFlight:
		if e.desired[u.uid] == nil && c.state == Offered {
			e.desired[u.uid] = pas
		}
		return c.state, c.err
	case f.Paused && f.Manual:
		return Paused, "rollout of fleet " + f.def.Name + " is paused by an operator"
	case f.Paused:
		return Paused, "rollout of fleet " + f.def.Name + " is paused after too many failures"
	case !f.waves.GateOpen(int(c.wave)):
		return WaitingWave, ""
	case !u.accepts:
		return NoUpdater, "the linked updater does not accept packages"
	}
	c.setOffer(e.specLocked(pv.Name, pv.Version, hash, pas.Packages[pv.Name].GetFile().GetContentHash(), e.offerKeyForLocked(c, u)), u.uid)
	e.desired[u.uid] = pas
	if u.online {
		e.outbox.Push(u.uid, pas)
		return Offered, ""
	}
	return Offered, "updater offline; the offer is delivered when it reconnects"
}

func (c *collector) errOr(def string) string {
	if c.err != "" && c.state == Failed {
		return c.err
	}
	return def
}

func (e *Engine) linkedUpdaterLocked(c *collector) *updater {
	ps, ok := e.ix.Collector(c.uid)
	if !ok || ps.State != pairing.Linked {
		return nil
	}
	return e.updaters[ps.Updater]
}

func (e *Engine) transitionEventLocked(c *collector, prev string) {
	if prev == c.state {
		return
	}
	from := prev
	if from == "" {
		from = "none"
	}
	to := c.state
	if to == "" {
		to = "none"
	}
	msg := fmt.Sprintf("offer %s → %s", from, to)
	if c.pkg != "" && c.state != "" {
		msg += fmt.Sprintf(" (%s %s)", c.pkg, c.target)
	}
	if c.err != "" {
		msg += ": " + c.err
	}
	e.reg.AddEvent(c.uid, "offer_"+to, msg)
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
