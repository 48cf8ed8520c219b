package opampsrv

import (
	"log/slog"
	"sync"
	"time"
)

// refusalLog logs refused agent requests per source address: the first of
// a minute with its reason, then, once the minute is over, how many more
// there were. A source flooding the endpoint with bad credentials costs at
// most two lines a minute; every refusal is still counted in the metrics.
type refusalLog struct {
	log *slog.Logger
	now func() time.Time

	mu        sync.Mutex
	sources   map[string]*refusalWindow // guarded by mu
	others    int                       // refusals from sources beyond maxRefusalSources; guarded by mu
	lastSweep time.Time                 // guarded by mu
}

type refusalWindow struct {
	start time.Time
	more  int // refusals after the logged one
}

const (
	refusalWindowLen  = time.Minute
	maxRefusalSources = 4096
)

func newRefusalLog(log *slog.Logger) *refusalLog {
	return &refusalLog{log: log, now: time.Now, sources: map[string]*refusalWindow{}, lastSweep: time.Now()}
}

// refused records one refusal from source (see backpressure.SourceKey);
// remote is the peer's address and why the reason, for the logged line.
func (l *refusalLog) refused(source, remote string, why error) {
	now := l.now()
	l.mu.Lock()
	var summaries []func()
	if now.Sub(l.lastSweep) >= refusalWindowLen {
		summaries = l.sweepLocked(now)
	}
	first := false
	if w, ok := l.sources[source]; ok {
		w.more++
	} else if len(l.sources) >= maxRefusalSources {
		l.others++
	} else {
		l.sources[source] = &refusalWindow{start: now}
		first = true
	}
	l.mu.Unlock()
	for _, s := range summaries {
		s()
	}
	if first {
		l.log.Info("refused agent connection; further refusals from this source are counted for a minute",
			"remote", remote, "reason", why)
	}
}

// sweepLocked ends the windows that are over and returns their summary
// lines, to be logged once mu is released.
func (l *refusalLog) sweepLocked(now time.Time) []func() {
	l.lastSweep = now
	var out []func()
	for src, w := range l.sources {
		if now.Sub(w.start) < refusalWindowLen {
			continue
		}
		delete(l.sources, src)
		if w.more > 0 {
			n, src := w.more, src
			out = append(out, func() {
				l.log.Info("refused further agent connections from one source", "source", src, "count", n, "since", w.start)
			})
		}
	}
	if l.others > 0 {
		n := l.others
		l.others = 0
		out = append(out, func() { l.log.Info("refused agent connections from further sources", "count", n) })
	}
	return out
}
