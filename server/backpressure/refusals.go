package backpressure

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// RefusalLog logs refused requests per source address (see SourceKey):
// the first of a minute with its details, then, once the minute is over,
// how many more there were. A source flooding an endpoint with bad
// credentials costs at most two lines a minute, however fast it sends.
// Safe for concurrent use.
type RefusalLog struct {
	o RefusalLogOptions

	mu        sync.Mutex
	sources   map[string]*refusalWindow // guarded by mu
	others    int                       // refusals from sources beyond maxRefusalSources; guarded by mu
	lastSweep time.Time                 // guarded by mu
}

// RefusalLogOptions configure a RefusalLog.
type RefusalLogOptions struct {
	Log   *slog.Logger
	Level slog.Level
	// First is the line of a source's first refusal in a minute, with the
	// attributes Refused is given.
	First string
	// More is the line, once that minute is over, of the source's further
	// refusals in it: source, count and since.
	More string
	// Others is the line of the refusals from sources beyond the most
	// followed at once: count.
	Others string
	Now    func() time.Time
}

type refusalWindow struct {
	start time.Time
	more  int // refusals after the logged one
}

const (
	refusalWindowLen  = time.Minute
	maxRefusalSources = 4096
)

// NewRefusalLog returns an empty RefusalLog.
func NewRefusalLog(o RefusalLogOptions) *RefusalLog {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &RefusalLog{o: o, sources: map[string]*refusalWindow{}, lastSweep: o.Now()}
}

// Refused records one refusal from source; attrs (key, value pairs) go
// with the line of the source's first refusal in a minute.
func (l *RefusalLog) Refused(source string, attrs ...any) {
	now := l.o.Now()
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
		l.o.Log.Log(context.Background(), l.o.Level, l.o.First, attrs...)
	}
}

// sweepLocked ends the windows that are over and returns their summary
// lines, to be logged once mu is released.
func (l *RefusalLog) sweepLocked(now time.Time) []func() {
	l.lastSweep = now
	var out []func()
	for src, w := range l.sources {
		if now.Sub(w.start) < refusalWindowLen {
			continue
		}
		delete(l.sources, src)
		if w.more > 0 {
			n, src, since := w.more, src, w.start
			out = append(out, func() {
				l.o.Log.Log(context.Background(), l.o.Level, l.o.More, "source", src, "count", n, "since", since)
			})
		}
	}
	if l.others > 0 {
		n := l.others
		l.others = 0
		out = append(out, func() { l.o.Log.Log(context.Background(), l.o.Level, l.o.Others, "count", n) })
	}
	return out
}
