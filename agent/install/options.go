package install

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/verify"
)

// SelfPackage is the TopLevel package name of the updater itself.
const SelfPackage = "myriarch-updater"

// Options are what every back-end shares: the updater's trust.*,
// state_dir, collector.health_window and collector.max_package_size, the
// download tuning, and timings.
type Options struct {
	// StateDir (state_dir) holds the journal, staging/, the quarantine and
	// the statuses.
	StateDir string
	// StatePrefix is put before the engine's quarantine and statuses file
	// names ("container-" in container mode, so a host that switched modes
	// never mixes their state).
	StatePrefix string

	// Trust (trust.*): local policy the server can never change.
	MinisignPublicKeys []string
	// MinisignKeys (trust.minisign_keys) are keys that may sign only
	// within their window: an artifact signed only by an expired key, or
	// one not valid yet, is refused.
	MinisignKeys []verify.KeySpec
	// Keyring (trust.root_keys), when set, gives the minisign keys in
	// force at each verification: the pinned ones with the keys of the
	// host's signed keyring added and its revocations marked.
	Keyring KeySource
	// Sigstore (trust.sigstore), when set, checks offers signed with a
	// Sigstore bundle (upstream releases signed keyless).
	Sigstore         *verify.SigstorePolicy
	RequireSignature bool
	AllowDowngrade   bool
	// Now is the clock keys' windows are judged by (default time.Now).
	Now func() time.Time

	// HealthWindow (collector.health_window, default 30 s): how long the new
	// version must stay up.
	HealthWindow time.Duration
	// MaxPackageSize (collector.max_package_size, default 1 GiB) caps an
	// artifact.
	MaxPackageSize int64

	// StartTimeout bounds the wait for a started version to come up (a
	// collector process under the supervisor, a container's HEALTHCHECK)
	// before the health window runs (default 60 s).
	StartTimeout time.Duration
	// PollInterval of the health gates (default 200 ms).
	PollInterval time.Duration
	// RetryBackoff is the first wait before a hash that failed for a
	// transient reason may be tried again (doubles up to 1 h; default 1 min).
	RetryBackoff time.Duration
	// VersionCheckTimeout bounds a pre-activation `--version` (default 10 s).
	VersionCheckTimeout time.Duration

	// NoSelfUpdate says why TopLevel offers of the updater are refused when
	// no back-end installs it ("" for the plain refusal).
	NoSelfUpdate string

	// Download tunes downloads (MaxSize comes from MaxPackageSize).
	Download download.Options

	// Observe, when set, is called at every crash point as it is passed
	// (tests and benchmarks follow a transaction with it).
	Observe func(point string)
	// Observer, when set, is told how transactions end (own metrics).
	Observer Observer
}

func (o Options) withDefaults() Options {
	def := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	def(&o.HealthWindow, 30*time.Second)
	def(&o.StartTimeout, 60*time.Second)
	def(&o.PollInterval, 200*time.Millisecond)
	def(&o.RetryBackoff, time.Minute)
	def(&o.VersionCheckTimeout, 10*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxPackageSize == 0 {
		o.MaxPackageSize = download.DefaultMaxSize
	}
	o.Download.MaxSize = o.MaxPackageSize
	return o
}

// Validate reports every invalid option, with its updater.yaml path.
func (o Options) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch {
	case o.StateDir == "":
		add("state_dir: required")
	case !filepath.IsAbs(o.StateDir):
		add("state_dir: must be an absolute path, got %q", o.StateDir)
	}
	if o.HealthWindow < 0 {
		add("collector.health_window: must be positive, got %s", o.HealthWindow)
	}
	if o.MaxPackageSize < 0 {
		add("collector.max_package_size: must be positive, got %d", o.MaxPackageSize)
	}
	if o.RequireSignature && len(o.MinisignPublicKeys) == 0 && len(o.MinisignKeys) == 0 && o.Sigstore == nil && o.Keyring == nil {
		add("trust.minisign_public_keys: required (or trust.minisign_keys, trust.root_keys or trust.sigstore) when trust.require_signature is true")
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"start timeout", o.StartTimeout}, {"poll interval", o.PollInterval}, {"retry backoff", o.RetryBackoff},
		{"version check timeout", o.VersionCheckTimeout}} {
		if d.d < 0 {
			add("install %s: must be positive, got %s", d.name, d.d)
		}
	}
	if err := o.Download.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
