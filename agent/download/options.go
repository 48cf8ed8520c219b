package download

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// Defaults applied by New to zero fields of Options.
const (
	DefaultMaxSize          = 1 << 30 // 1 GiB
	DefaultConnectTimeout   = 15 * time.Second
	DefaultIdleTimeout      = 30 * time.Second
	DefaultLowSpeedLimit    = 1024 // bytes per second
	DefaultLowSpeedTime     = 60 * time.Second
	DefaultAttempts         = 5
	DefaultBackoffBase      = time.Second
	DefaultBackoffMax       = time.Minute
	DefaultProgressInterval = 2 * time.Second
	DefaultFreeSpaceFactor  = 3
	DefaultMaxRedirects     = 10
)

// Options tune a Fetcher. The zero value is usable: every zero field takes
// its Default value.
type Options struct {
	// MaxSize is the largest artifact accepted, in bytes.
	MaxSize int64
	// ConnectTimeout bounds TCP connect and TLS handshake.
	ConnectTimeout time.Duration
	// IdleTimeout cuts a connection that delivers no byte for this long
	// (also bounds the wait for response headers).
	IdleTimeout time.Duration
	// LowSpeedLimit and LowSpeedTime cut a connection whose average rate
	// over any LowSpeedTime window stays below LowSpeedLimit bytes/s (a
	// slow-drip server never trips IdleTimeout).
	LowSpeedLimit int64
	LowSpeedTime  time.Duration
	// Attempts is the total number of HTTP attempts, first one included.
	Attempts int
	// BackoffBase and BackoffMax shape the delay before attempt n+1:
	// a random duration in [d/2, d] with d = min(BackoffMax, BackoffBase·2^(n-1)).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// ProgressInterval is how often Request.Progress is called while
	// downloading (the OpAMP contract asks for at most 5 s).
	ProgressInterval time.Duration
	// FreeSpaceFactor: the destination must have FreeSpaceFactor ×
	// Content-Length bytes free (download + unpacked copy + headroom).
	FreeSpaceFactor int
	// MaxRedirects bounds redirect chains; a loop fails at once.
	MaxRedirects int
	// AllowedHosts, when not empty, are the only hosts a download (its URL
	// and every redirect) may go to; empty allows any host. Whatever it
	// says, the request's headers are never sent across a redirect to
	// another origin.
	AllowedHosts []HostPattern
	// FreeSpace reports the free bytes of the file system holding dir.
	// Nil uses the operating system; tests inject small values.
	FreeSpace func(dir string) (uint64, error)
	// WrapWriter, when set, wraps the destination file writer. Tests use it
	// to simulate a disk filling up in the middle of a download.
	WrapWriter func(io.Writer) io.Writer
	// Transport overrides the HTTP transport (tests, custom TLS). Nil builds
	// one with the timeouts above and http.ProxyFromEnvironment.
	Transport http.RoundTripper
	// Logger receives retry and resume notices. Nil discards.
	Logger *slog.Logger
}

// Validate reports every invalid field.
func (o Options) Validate() error {
	var errs []error
	neg := func(name string, v int64) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("download.%s: must not be negative, got %d", name, v))
		}
	}
	neg("max_size", o.MaxSize)
	neg("connect_timeout", int64(o.ConnectTimeout))
	neg("idle_timeout", int64(o.IdleTimeout))
	neg("low_speed_limit", o.LowSpeedLimit)
	neg("low_speed_time", int64(o.LowSpeedTime))
	neg("attempts", int64(o.Attempts))
	neg("backoff_base", int64(o.BackoffBase))
	neg("backoff_max", int64(o.BackoffMax))
	neg("free_space_factor", int64(o.FreeSpaceFactor))
	neg("max_redirects", int64(o.MaxRedirects))
	for _, h := range o.AllowedHosts {
		if _, err := ParseHostPattern(string(h)); err != nil {
			errs = append(errs, fmt.Errorf("download.allowed_hosts: %w", err))
		}
	}
	if o.ProgressInterval < 0 || o.ProgressInterval > 5*time.Second {
		errs = append(errs, fmt.Errorf("download.progress_interval: must be within (0, 5s], got %s", o.ProgressInterval))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	set := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	set(&o.ConnectTimeout, DefaultConnectTimeout)
	set(&o.IdleTimeout, DefaultIdleTimeout)
	set(&o.LowSpeedTime, DefaultLowSpeedTime)
	set(&o.BackoffBase, DefaultBackoffBase)
	set(&o.BackoffMax, DefaultBackoffMax)
	set(&o.ProgressInterval, DefaultProgressInterval)
	if o.LowSpeedLimit == 0 {
		o.LowSpeedLimit = DefaultLowSpeedLimit
	}
	if o.Attempts == 0 {
		o.Attempts = DefaultAttempts
	}
	if o.FreeSpaceFactor == 0 {
		o.FreeSpaceFactor = DefaultFreeSpaceFactor
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.FreeSpace == nil {
		o.FreeSpace = freeSpace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
