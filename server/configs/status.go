package configs

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/estate"
)

// ContentType is the content type of every configuration sent.
const ContentType = "text/yaml"

// OnAgentMessage implements opampsrv.Hook: it records the agent's remote
// config status and effective config, and answers with the desired
// configuration when the agent does not run it yet. An instance that does
// not lead records them for the leader, which acts on them.
func (e *Engine) OnAgentMessage(uid uuid.UUID, msg *protobufs.AgentToServer, resp *protobufs.ServerToAgent) {
	// An effective configuration, and the desired one it is checked
	// against, are read before the lock is taken.
	var ef *effective
	var want []string
	var wantOK bool
	wantOf := ""
	if ec := msg.GetEffectiveConfig(); ec != nil {
		ef = e.readEffective(ec.GetConfigMap())
		var body []byte
		e.mu.Lock()
		if r := e.records[uid]; r != nil {
			wantOf, body = r.desired, e.bodies[r.desired]
		}
		e.mu.Unlock()
		if wantOf != "" {
			want, wantOK = e.defined.of(wantOf, body)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[uid]
	if r == nil || !r.view.Known() {
		return
	}
	if hl := msg.GetHealth(); hl != nil {
		e.health(r, hl)
	}
	if st := msg.GetRemoteConfigStatus(); st != nil {
		next := reported{Hash: hex.EncodeToString(st.GetLastRemoteConfigHash()), Status: statusName(st.GetStatus()), Error: st.GetErrorMessage()}
		switch {
		case next.Hash == "" && next.Status != StatusUnset:
			// Nothing can be concluded about a configuration that is not named.
			e.event(r, "config_status_ignored", "the agent reported remote config status "+next.Status+" without a config hash; it is ignored")
		case e.role.Leads():
			e.remoteConfigStatus(r, next)
		default:
			e.observeStatus(r, next)
		}
	}
	if why, stuck := e.stuck(r); stuck {
		if e.role.Leads() {
			e.failed(r, r.desired, why)
			e.reevaluate(r)
		} else {
			d := r.own()
			d.failing, d.failingSeen, d.stuckWhy = r.desired, false, why
		}
	}
	if ef != nil {
		if ef.hash != r.effective {
			r.effective = ef.hash
			if e.role.Leads() {
				e.dirty[r.uid] = struct{}{}
				if ef.size > MaxEffective {
					e.event(r, "config_effective_not_read", fmt.Sprintf("the effective configuration %s of %d bytes is over the %d bytes the server reads; "+
						"whether it holds the desired configuration's components is not checked", short(ef.hash), ef.size, MaxEffective))
				}
			}
		}
		if r.desired != "" {
			tr := r.track()
			tr.effectiveOf, tr.effectiveMissing = r.desired, nil
			if r.desired == wantOf { // else it changed meanwhile: checked with the next report
				tr.effectiveMissing = missing(want, wantOK, ef)
			}
		}
	}
	e.checkEffective(r)
	r.untrack()
	e.report(r)
	r.shed()
	if e.shouldSend(r) {
		resp.RemoteConfig = e.remoteConfig(r)
	}
	e.kick()
}

// observeStatus records a status of an agent connected to this instance
// while another decides: the leader acts on it once reported; meanwhile a
// FAILED desired configuration is not sent again, and one the agent no
// longer runs is. Caller holds e.mu.
func (e *Engine) observeStatus(r *record, next reported) {
	prev := r.reported
	if (next.Status != prev.Status || next.Hash != prev.Hash) && r.tr != nil {
		r.tr.applyingSince = time.Time{}
	}
	r.own().reported = next
	if prev.Hash == r.desired && next.Hash != r.desired {
		r.sendAgain()
	}
	switch {
	case interrupted(next) && next.Hash == r.desired:
		// Judged by the collector's health: sent again once it is healthy.
		r.sendAgain()
	case next.Status == StatusFailed && next.Hash == r.desired && !r.isFailed(next.Hash):
		d := r.own()
		d.failing, d.failingSeen, d.stuckWhy = next.Hash, false, ""
	case next.Status != StatusFailed && next.Hash == r.failing:
		r.own().failing = ""
	}
}

// checkEffective sends the desired configuration again, once at once and
// then every ResendAfter, while the agent reports it applied but runs
// without some of its components. Caller holds e.mu.
func (e *Engine) checkEffective(r *record) {
	if !r.notEffective() || r.tracking().notEffectiveNoted == r.desired {
		return
	}
	r.track().notEffectiveNoted = r.desired
	r.sendAgain()
	if e.role.Leads() {
		e.event(r, "config_not_effective", "the collector reports configuration "+short(r.desired)+
			" applied but runs without "+listUpTo(r.tracking().effectiveMissing, 5)+"; it is sent again")
	}
}

func listUpTo(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(" and %d more", len(ids)-n)
}

// health records whether the agent is healthy.
func (e *Engine) health(r *record, hl *protobufs.ComponentHealth) {
	if hl.GetHealthy() {
		if r.tr != nil {
			r.tr.unhealthySince, r.tr.healthErr = time.Time{}, ""
			r.untrack()
		}
		return
	}
	tr := r.track()
	if tr.unhealthySince.IsZero() {
		tr.unhealthySince = e.opts.Now()
	}
	tr.healthErr = hl.GetLastError()
}

// stuck reports whether the agent has been APPLYING its desired
// configuration while unhealthy for StuckAfter, and why: the Supervisor
// reports FAILED only when the collector crashes during an apply, not when
// it starts crash-looping on a rejected configuration it cached before a
// restart. Caller holds e.mu.
func (e *Engine) stuck(r *record) (string, bool) {
	if r.reported.Status != StatusApplying && !interrupted(r.reported) || r.reported.Hash == "" {
		if r.tr != nil {
			r.tr.applyingSince = time.Time{}
		}
		return "", false
	}
	now := e.opts.Now()
	tr := r.track()
	if tr.applyingSince.IsZero() {
		tr.applyingSince = now
	}
	if r.reported.Hash != r.desired || r.isFailed(r.desired) || r.failing == r.desired || tr.unhealthySince.IsZero() {
		return "", false
	}
	since := tr.applyingSince
	if tr.unhealthySince.After(since) {
		since = tr.unhealthySince
	}
	if now.Sub(since) < e.opts.StuckAfter {
		return "", false
	}
	why := "no FAILED report; the collector has been unhealthy for " + now.Sub(since).Round(time.Second).String() +
		" while applying it (a configuration APPLYING while unhealthy for " + e.opts.StuckAfter.String() + " fails)"
	if r.reported.Status == StatusFailed {
		why = r.reported.Error + "; the collector has been unhealthy for " + now.Sub(since).Round(time.Second).String() +
			" since (a collector that stays unhealthy for " + e.opts.StuckAfter.String() + " after such an exit fails its configuration)"
	}
	if tr.healthErr != "" {
		why += ": " + tr.healthErr
	}
	return why, true
}

// remoteConfigStatus applies one remote config status (named by its hash
// but for UNSET). Caller holds e.mu; leading.
func (e *Engine) remoteConfigStatus(r *record, next reported) {
	h, status := next.Hash, next.Status
	if status == "" {
		status = StatusUnset
		next.Status = status
	}
	if (next.Status != r.reported.Status || next.Hash != r.reported.Hash) && r.tr != nil {
		r.tr.applyingSince = time.Time{}
	}
	// failed again after a retry
	again := status == StatusFailed && h == r.desired && !r.isFailed(h) && !interrupted(next)
	if next == r.reported && !again {
		return
	}
	prev := r.reported
	r.own().reported = next
	e.dirty[r.uid] = struct{}{}
	if prev.Hash == r.desired && h != r.desired {
		// It ran the desired configuration and no longer does (a full
		// state report after a restart that lost it): send it again now.
		r.sendAgain()
	}
	_, known := e.bodies[h]
	sent := known && (h == r.desired || h == r.applied || h == r.assigned || r.isFailed(h))
	switch {
	case h == "":
		// UNSET without a hash: the agent runs no remote configuration.
	case !known:
		e.event(r, "config_unknown_hash", "the agent reports config "+short(h)+" ("+status+"), which this server never sent")
	case status == StatusApplied:
		if prev.Hash != h || prev.Status != StatusApplied {
			e.event(r, "config_applied", "configuration "+short(h)+" applied")
		}
		if sent {
			r.own().applied = h
		}
	case interrupted(next) && h == r.desired && !r.isFailed(h):
		r.sendAgain()
		e.event(r, "config_apply_interrupted", "the Supervisor reported configuration "+short(h)+" FAILED: "+next.Error+
			"; an exit the collector did not choose is not the configuration's failure by itself: it is sent again once the collector is healthy, "+
			"and fails if the collector stays unhealthy for "+e.opts.StuckAfter.String())
	case status == StatusFailed:
		e.failed(r, h, next.Error)
	}
	e.reevaluate(r)
}

// failed handles FAILED for hash h: when it is the desired hash, h becomes
// failed, the fleet's failures count, and desired rolls back.
func (e *Engine) failed(r *record, h, why string) {
	if why == "" {
		why = "the agent reported FAILED without a message"
	}
	if h != r.desired || r.isFailed(h) {
		e.event(r, "config_failed", "configuration "+short(h)+" failed: "+why)
		return
	}
	r.addFailed(h)
	r.own().failedWhy = why
	e.event(r, "config_failed", "configuration "+short(h)+" failed: "+why)
	if f := e.fleets[r.fleet]; f != nil {
		f.dirty = true
		if f.Fail(f.def) {
			e.log.Warn("configuration rollout paused", "fleet", f.def.Name, "failures", f.Spent(), "maxFailures", f.def.Rollout.MaxFailures)
			e.opts.Notice.Say(estate.EventRolloutPaused, f.def.Name, fmt.Sprintf("configuration rollout paused after %d failed configurations (maxFailures %d)", f.Spent(), f.def.Rollout.MaxFailures))
		}
	}
}

// reevaluate re-runs the agent (and whatever waves its change opens).
func (e *Engine) reevaluate(r *record) {
	e.evaluate(map[uuid.UUID]struct{}{r.uid: {}})
	e.saveFleets()
}

// remoteConfig builds the message for the desired configuration and marks
// it sent. Caller holds e.mu.
func (e *Engine) remoteConfig(r *record) *protobufs.AgentRemoteConfig {
	body := e.bodies[r.desired]
	hash, _ := hex.DecodeString(r.desired)
	d := r.own()
	d.sentHash, d.sentAt = r.desired, stamp.Of(e.opts.Now())
	e.event(r, "config_sent", "configuration "+short(r.desired)+" sent")
	return &protobufs.AgentRemoteConfig{
		Config: &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{
			"": {Body: body, ContentType: ContentType},
		}},
		ConfigHash: hash,
	}
}

func statusName(s protobufs.RemoteConfigStatuses) string {
	switch s {
	case protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING:
		return StatusApplying
	case protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED:
		return StatusApplied
	case protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED:
		return StatusFailed
	default:
		return StatusUnset
	}
}

// interruptedRE is the upstream Supervisor's FAILED message for a collector
// process that exited while a configuration was being applied.
var interruptedRE = regexp.MustCompile(`^Agent exited unexpectedly with exit code (-?[0-9]+) while applying configuration$`)

// interrupted reports whether a status is a FAILED that does not say the
// configuration failed: the Supervisor saw the collector exit while
// applying it, with exit code 0 (it was stopped and exited cleanly) or -1
// (a signal ended it). Both happen without any fault of the
// configuration: the Supervisor stopped (its host's updater restarting
// it), or the Supervisor saw, late, the exit of the collector process it
// had itself stopped to apply the configuration while the new one runs.
// A collector that rejects its configuration exits with a code of its own
// (1), which is a failure at once. An interrupted apply is judged by what
// follows: sent again once the collector is healthy (the Supervisor then
// answers APPLIED), failed when it stays unhealthy for StuckAfter.
func interrupted(rep reported) bool {
	if rep.Status != StatusFailed {
		return false
	}
	m := interruptedRE.FindStringSubmatch(rep.Error)
	return m != nil && (m[1] == "0" || m[1] == "-1")
}
