package binary

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-version"

	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/loopback"
)

// SelfPackage is the TopLevel package name of the updater itself.
const SelfPackage = "myriarch-updater"

// Options mirror the updater configuration the engine uses.
type Options struct {
	// Collector (collector.* in updater.yaml).
	Package        string        // collector.package: the only Addon accepted
	Root           string        // collector.root: holds versions/ and current
	Executable     string        // collector.executable: file name inside a version dir
	HealthWindow   time.Duration // collector.health_window (default 30 s)
	MaxPackageSize int64         // collector.max_package_size (default 1 GiB)

	// Trust (trust.*): local policy the server can never change.
	MinisignPublicKeys []string
	RequireSignature   bool
	AllowDowngrade     bool

	// StateDir (state_dir) holds the journal, staging, quarantine, failed/.
	StateDir string
	// StorageDir is the supervisor's storage.directory (its agent.log is kept
	// when a version fails).
	StorageDir string
	// HealthcheckURL is the supervisor's healthcheck.endpoint as a URL
	// (http://127.0.0.1:port/...), "" when it has none. Loopback only.
	HealthcheckURL string

	// StartTimeout bounds the wait for the new collector process to appear
	// after the supervisor started (default 60 s; the real supervisor runs
	// the collector twice before the real run).
	StartTimeout time.Duration
	// VersionCheckTimeout bounds `<exe> --version` (default 10 s).
	VersionCheckTimeout time.Duration
	// MaxCollectorStarts: more distinct collector processes than this during
	// the health gate counts as a crash loop (default 3: the upstream
	// supervisor starts the collector for feature gates, bootstrap, and real).
	MaxCollectorStarts int
	// PollInterval of the health gate (default 200 ms).
	PollInterval time.Duration
	// RetryBackoff is the first wait before a download that failed for a
	// transient reason may be retried for the same hash (doubles up to 1 h;
	// default 1 min).
	RetryBackoff time.Duration

	// Self-update.
	// UpdaterVersion is the running updater's version (buildinfo.Version).
	UpdaterVersion string
	// UpdaterExecutable is the updater binary to replace ("" = os.Executable()).
	UpdaterExecutable string
	// UpdaterVersionArgs are passed to a new updater binary before it is
	// installed; its output must name the offered version (default --version).
	UpdaterVersionArgs []string
	// RequestRestart is called after the updater binary was replaced: the
	// caller must exit (non-zero) so the service manager restarts it. Nil
	// refuses TopLevel offers.
	RequestRestart func(reason string)

	// Download overrides download tuning (size cap comes from MaxPackageSize).
	Download download.Options
}

func (o Options) withDefaults() Options {
	if o.HealthWindow == 0 {
		o.HealthWindow = 30 * time.Second
	}
	if o.MaxPackageSize == 0 {
		o.MaxPackageSize = download.DefaultMaxSize
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.VersionCheckTimeout == 0 {
		o.VersionCheckTimeout = 10 * time.Second
	}
	if o.MaxCollectorStarts == 0 {
		o.MaxCollectorStarts = 3
	}
	if o.PollInterval == 0 {
		o.PollInterval = 200 * time.Millisecond
	}
	if o.RetryBackoff == 0 {
		o.RetryBackoff = time.Minute
	}
	if o.UpdaterVersionArgs == nil {
		o.UpdaterVersionArgs = []string{"--version"}
	}
	o.Download.MaxSize = o.MaxPackageSize
	return o
}

// Validate reports every invalid option.
func (o Options) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.Package == "" {
		add("collector.package: required")
	} else if o.Package == SelfPackage {
		add("collector.package: %q is reserved for the updater itself", SelfPackage)
	}
	for name, p := range map[string]string{"collector.root": o.Root, "state_dir": o.StateDir, "supervisor.storage_dir": o.StorageDir} {
		if p == "" {
			add("%s: required", name)
		} else if !filepath.IsAbs(p) {
			add("%s: must be an absolute path, got %q", name, p)
		}
	}
	if o.Executable == "" || strings.ContainsAny(o.Executable, `/\`) {
		add("collector.executable: must be a file name, got %q", o.Executable)
	}
	if o.HealthWindow < 0 {
		add("collector.health_window: must be positive, got %s", o.HealthWindow)
	}
	if o.MaxPackageSize < 0 {
		add("collector.max_package_size: must be positive, got %d", o.MaxPackageSize)
	}
	if o.RequireSignature && len(o.MinisignPublicKeys) == 0 {
		add("trust.minisign_public_keys: required when trust.require_signature is true")
	}
	if o.UpdaterVersion != "" {
		if _, err := version.NewVersion(o.UpdaterVersion); err != nil {
			add("updater version %q: %v", o.UpdaterVersion, err)
		}
	}
	if o.HealthcheckURL != "" {
		if err := loopback.CheckURL(o.HealthcheckURL); err != nil {
			add("supervisor healthcheck endpoint: %v", err)
		}
	}
	if err := o.Download.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func defaultUpdaterExe() string {
	if runtime.GOOS == "windows" {
		return SelfPackage + ".exe"
	}
	return SelfPackage
}
