// Package backpressure admits new agent connections at a bounded rate so a
// reconnect storm (every agent coming back after a server restart) is spread
// out instead of landing at once. Refused agents are told when to come back:
// OpAMP clients honour HTTP 503 with Retry-After, and the delay handed out
// grows with the backlog, so the refused do not all return together.
package backpressure

import (
	"math"
	"sync"
	"time"
)

// Limiter is a token bucket of admissions. The zero value is not usable;
// create one with New. Safe for concurrent use.
type Limiter struct {
	rate  float64 // admissions per second
	burst float64
	max   time.Duration // longest Retry-After handed out
	now   func() time.Time

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	backlog float64 // refusals not yet paid back, decays at rate
}

// Options configure a Limiter; zero values take the defaults.
type Options struct {
	Rate          float64       // admissions per second; default 1000
	Burst         int           // admissions allowed at once; default Rate
	MaxRetryAfter time.Duration // default 60 s
	Now           func() time.Time
}

// New returns a Limiter that starts full.
func New(o Options) *Limiter {
	if o.Rate <= 0 {
		o.Rate = 1000
	}
	if o.Burst <= 0 {
		o.Burst = int(math.Ceil(o.Rate))
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Limiter{rate: o.Rate, burst: float64(o.Burst), max: o.MaxRetryAfter, now: o.Now,
		tokens: float64(o.Burst), last: o.Now()}
}

// Admit takes one admission. When none is left it returns false and how
// long the caller should wait: long enough for the agents refused before it
// to be admitted first, at least one second.
func (l *Limiter) Admit() (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	el := now.Sub(l.last).Seconds()
	l.last = now
	l.tokens = math.Min(l.burst, l.tokens+el*l.rate)
	l.backlog = math.Max(0, l.backlog-el*l.rate)
	if l.tokens >= 1 {
		l.tokens--
		return true, 0
	}
	l.backlog++
	wait := time.Duration(math.Ceil(l.backlog/l.rate)) * time.Second
	return false, min(max(wait, time.Second), l.max)
}
