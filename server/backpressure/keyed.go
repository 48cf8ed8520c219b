package backpressure

import (
	"math"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Keyed is a token bucket per key (a source address), for budgets that one
// peer must not be able to spend for the others, such as refused
// authentications. It holds at most MaxKeys buckets: when it is full,
// buckets that have refilled (their key has been quiet) are forgotten, and
// if none has, new keys share one overflow bucket. Safe for concurrent use.
type Keyed struct {
	rate, burst float64
	maxKeys     int
	now         func() time.Time

	mu       sync.Mutex
	buckets  map[string]*bucket // guarded by mu
	overflow bucket             // guarded by mu
}

type bucket struct {
	tokens float64
	last   time.Time
}

// KeyedOptions configure a Keyed; zero values take the defaults.
type KeyedOptions struct {
	Rate    float64 // per key and second; default 1
	Burst   int     // default 10
	MaxKeys int     // default 16 384
	Now     func() time.Time
}

// NewKeyed returns a Keyed whose buckets start full.
func NewKeyed(o KeyedOptions) *Keyed {
	if o.Rate <= 0 {
		o.Rate = 1
	}
	if o.Burst <= 0 {
		o.Burst = 10
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 16384
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	k := &Keyed{rate: o.Rate, burst: float64(o.Burst), maxKeys: o.MaxKeys, now: o.Now, buckets: map[string]*bucket{}}
	k.overflow = bucket{tokens: k.burst, last: o.Now()}
	return k
}

// Allow takes one token from key's bucket and reports whether there was one.
func (k *Keyed) Allow(key string) bool { return k.take(key, 1) }

// Available reports whether key's bucket holds a token, without taking it:
// for budgets spent only by what fails (take with Allow when it does).
func (k *Keyed) Available(key string) bool { return k.take(key, 0) }

// Forget gives key its full budget back (its bucket is dropped): for a
// source that has just proven who it is. A key in the overflow bucket
// keeps sharing it.
func (k *Keyed) Forget(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.buckets, key)
}

// take takes n (0 or 1) tokens from key's bucket when it has at least one.
func (k *Keyed) take(key string, n float64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	b, ok := k.buckets[key]
	if !ok && n == 0 && len(k.buckets) < k.maxKeys {
		return true // a new key's bucket starts full: nothing to keep yet
	}
	if !ok {
		if len(k.buckets) >= k.maxKeys {
			k.forgetFullLocked(now)
		}
		if len(k.buckets) >= k.maxKeys {
			b = &k.overflow
		} else {
			b = &bucket{tokens: k.burst, last: now}
			k.buckets[key] = b
		}
	}
	b.tokens = math.Min(k.burst, b.tokens+now.Sub(b.last).Seconds()*k.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens -= n
	return true
}

// forgetFullLocked drops the buckets that would be full by now.
func (k *Keyed) forgetFullLocked(now time.Time) {
	for key, b := range k.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*k.rate >= k.burst {
			delete(k.buckets, key)
		}
	}
}

// SourceKey is the budget key of a remote address ("host:port" as in
// http.Request.RemoteAddr): the IPv4 address, or the /64 of an IPv6 one
// (a single host commonly holds a whole /64).
func SourceKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
