package offers

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/stamp"
	"github.com/myriarch/myriarch/server/estate"
)

// OnAgentMessage implements opampsrv.Hook: it tracks an updater's package
// statuses and attaches the desired package set while the updater has not
// acknowledged it (server_provided_all_packages_hash).
func (e *Engine) OnAgentMessage(uid uuid.UUID, msg *protobufs.AgentToServer, resp *protobufs.ServerToAgent) {
	e.mu.Lock()
	if _, isUpdater := e.updaters[uid]; !isUpdater {
		e.mu.Unlock()
		return
	}
	var dirty map[string]*rolloutState
	if ps := msg.GetPackageStatuses(); ps != nil {
		// Status compression: agents resend statuses only when they change,
		// so remember what each updater last acknowledged.
		e.acked[uid] = ps.GetServerProvidedAllPackagesHash()
		e.selfUpdateLocked(uid, ps)
		now := e.opts.Now().UTC()
		e.reportLocked(uid, ps, now)
		if e.role.Leads() {
			dirty = e.packageStatusesLocked(uid, ps, time.Time{})
			if c := e.linkedCollectorLocked(uid); c != nil && now.After(c.reportAt.Time()) {
				c.reportAt = stamp.Of(now)
			}
		}
	}
	if d := e.desired[uid]; d != nil && !bytes.Equal(e.acked[uid], d.AllPackagesHash) {
		resp.PackagesAvailable = d
	}
	e.mu.Unlock()
	e.saveFleets(dirty)
}

// linkedCollectorLocked is the collector an updater is linked to; caller holds e.mu.
func (e *Engine) linkedCollectorLocked(updaterUID uuid.UUID) *collector {
	s, ok := e.ix.Updater(updaterUID)
	if !ok || s.Collector == uuid.Nil {
		return nil
	}
	return e.collectors[s.Collector]
}

// packageStatusesLocked applies one report; caller holds e.mu. A report another
// instance received (at set: when) is applied once: not when its collector
// has applied one received at or after that time.
func (e *Engine) packageStatusesLocked(updaterUID uuid.UUID, ps *protobufs.PackageStatuses, at time.Time) map[string]*rolloutState {
	c := e.linkedCollectorLocked(updaterUID)
	if c == nil || c.pkg == "" {
		return nil
	}
	if !at.IsZero() {
		if !at.After(c.reportAt.Time()) {
			return nil
		}
		c.reportAt = stamp.Of(at)
	}
	st := ps.Packages[c.pkg]
	if st == nil || len(c.hash) == 0 || !c.isCurrent(st) {
		return nil // a status about something we no longer offer
	}
	if c.state == UpToDate {
		// The collector already reports the target version: a late or
		// re-sent status (the updater's and the collector's reports travel on
		// different connections) must not move the offer backwards.
		return nil
	}
	prev, prevErr, prevProgress := c.state, c.err, c.progress
	switch st.Status {
	case protobufs.PackageStatusEnum_PackageStatusEnum_Downloading:
		c.state = Downloading
		c.setErr("")
		if d := st.DownloadDetails; d != nil {
			c.setProgress(&Progress{Percent: d.DownloadPercent, BytesPerSec: d.DownloadBytesPerSecond})
		}
	case protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending, protobufs.PackageStatusEnum_PackageStatusEnum_Installing:
		c.state = Installing
		c.setErr("")
		c.setProgress(nil)
	case protobufs.PackageStatusEnum_PackageStatusEnum_Installed:
		// Installed is not the end: up_to_date needs the collector itself to
		// report the target version.
		c.state = Installed
		c.setErr("")
		c.setProgress(nil)
	case protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed:
		if c.state == Failed && c.failed[hex.EncodeToString([]byte(c.hash))] {
			return nil
		}
		d := c.own()
		if d.failed == nil {
			d.failed = map[string]bool{}
		}
		d.failed[hex.EncodeToString([]byte(d.hash))] = true
		c.state, d.progress = Failed, nil
		d.err = st.ErrorMessage
		if d.err == "" {
			d.err = "the updater reported InstallFailed"
		}
		delete(e.desired, updaterUID)
	}
	if prev == c.state && prevErr == c.err {
		if c.progress != prevProgress {
			e.persistLocked(c)
		}
		return nil
	}
	c.updated = stamp.Of(e.opts.Now())
	e.transitionEventLocked(c, prev)
	e.persistLocked(c)
	f := e.fleets[c.fleet]
	var before int
	if f != nil {
		before = f.waves.FirstClosed()
	}
	e.countLocked(c)
	work := map[uuid.UUID]struct{}{}
	if f != nil && c.state == Failed && prev != Failed {
		f.dirty = true
		if f.Fail(f.def) {
			e.log.Warn("rollout paused", "fleet", f.def.Name, "failures", f.Spent(), "maxFailures", f.def.Rollout.MaxFailures)
			e.opts.Notice.Say(estate.EventRolloutPaused, f.def.Name, fmt.Sprintf("package rollout paused after %d failed offers (maxFailures %d)", f.Spent(), f.def.Rollout.MaxFailures))
			work = f.waves.MemberSet()
		}
	}
	if f != nil && f.waves.FirstClosed() > before {
		for m := range f.waves.Members() {
			work[m] = struct{}{}
		}
	}
	e.evaluateLocked(work)
	return e.dirtyFleetsLocked()
}

// Retry clears a collector's failed hashes so its offer is made again.
func (e *Engine) Retry(uid uuid.UUID) error {
	e.mu.Lock()
	c, ok := e.collectors[uid]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("no collector %s", uid)
	}
	c.clearFailed()
	e.reg.AddEvent(uid, "offer_retry", "failed offers cleared by an operator")
	e.persistLocked(c)
	e.evaluateLocked(map[uuid.UUID]struct{}{uid: {}})
	e.mu.Unlock()
	return nil
}

// Resume un-pauses a fleet's rollout; failures count anew from here.
func (e *Engine) Resume(name string) error {
	e.mu.Lock()
	f, ok := e.fleets[name]
	if !ok || f.def.Package == "" {
		e.mu.Unlock()
		return fmt.Errorf("no fleet %q", name)
	}
	if f.Paused {
		e.opts.Notice.Say(estate.EventRolloutResumed, name, "package rollout resumed by an operator")
	}
	f.Resume()
	f.dirty = true
	e.evaluateLocked(f.waves.MemberSet())
	dirty := e.dirtyFleetsLocked()
	e.mu.Unlock()
	e.saveFleets(dirty)
	return nil
}

// isCurrent reports whether a status is about the current offer. The spec's
// server_offered_hash is the PackageAvailable hash; agents that echo the
// file's content_hash instead are matched by that and the offered version.
func (c *collector) isCurrent(st *protobufs.PackageStatus) bool {
	if string(st.ServerOfferedHash) == c.hash {
		return true
	}
	return len(c.content) > 0 && string(st.ServerOfferedHash) == c.content && st.ServerOfferedVersion == c.offerVer
}
