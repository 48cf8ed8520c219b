package container

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/loopback"
)

// VersionLabel is the image label that names the collector version.
const VersionLabel = "org.opencontainers.image.version"

// NextSuffix is appended to the container name for the new container while
// the swap runs.
const NextSuffix = "-next"

// Options mirror the updater configuration the engine uses.
type Options struct {
	// Name is container.name: the collector container to manage.
	Name string
	// DockerHost is container.docker_host ("" = DOCKER_HOST or the default socket).
	DockerHost string
	// Package is collector.package: the only Addon accepted.
	Package string
	// HealthWindow is collector.health_window (default 30 s): the new
	// container must run that long without a restart.
	HealthWindow time.Duration
	// MaxPackageSize caps an image tarball (default 1 GiB).
	MaxPackageSize int64

	MinisignPublicKeys []string
	RequireSignature   bool
	AllowDowngrade     bool

	// StateDir holds the journal, staging/, quarantine and statuses.
	StateDir string
	// StorageDir is the supervisor's storage directory as seen INSIDE the
	// container. When set it must be on a volume or bind mount, and the
	// instance UID in its persistent_state.yaml must survive the swap.
	StorageDir string
	// HealthcheckURL is the supervisor's health endpoint (loopback only:
	// the collector container uses host networking); "" when none.
	HealthcheckURL string

	// StartTimeout bounds the wait for a Docker HEALTHCHECK to leave
	// "starting" and for HealthcheckURL to answer 200 (default 60 s).
	StartTimeout time.Duration
	// PollInterval of the health gate (default 200 ms).
	PollInterval time.Duration
	// RetryBackoff is the first wait before a transiently failed hash may be
	// retried (doubles up to 1 h; default 1 min).
	RetryBackoff time.Duration
	// PullTimeout bounds a registry pull (default 15 min).
	PullTimeout time.Duration

	// Download tunes tarball downloads (MaxSize comes from MaxPackageSize).
	Download download.Options
}

var containerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,120}$`)

// Validate reports every invalid option.
func (o Options) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !containerName.MatchString(o.Name) {
		add("container.name: must match %s, got %q", containerName, o.Name)
	}
	if o.DockerHost != "" {
		if u, err := url.Parse(o.DockerHost); err != nil || !oneOf(u.Scheme, "unix", "npipe", "tcp", "http", "https") {
			add("container.docker_host: must be a unix://, npipe://, tcp:// or http(s):// URL, got %q", o.DockerHost)
		}
	}
	if o.Package == "" {
		add("collector.package: required")
	}
	if o.StateDir == "" || !strings.HasPrefix(o.StateDir, "/") && !isWinAbs(o.StateDir) {
		add("state_dir: must be an absolute path, got %q", o.StateDir)
	}
	if o.StorageDir != "" && !path.IsAbs(o.StorageDir) {
		add("supervisor.storage_dir: must be an absolute path inside the container, got %q", o.StorageDir)
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
	if o.HealthcheckURL != "" {
		if err := loopback.CheckURL(o.HealthcheckURL); err != nil {
			add("supervisor healthcheck endpoint: %v", err)
		}
	}
	for name, d := range map[string]time.Duration{"start_timeout": o.StartTimeout, "poll_interval": o.PollInterval, "retry_backoff": o.RetryBackoff, "pull_timeout": o.PullTimeout} {
		if d < 0 {
			add("container engine %s: must be positive, got %s", name, d)
		}
	}
	if err := o.Download.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
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
	def(&o.PullTimeout, 15*time.Minute)
	if o.MaxPackageSize == 0 {
		o.MaxPackageSize = download.DefaultMaxSize
	}
	o.Download.MaxSize = o.MaxPackageSize
	return o
}

func oneOf(s string, set ...string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

func isWinAbs(p string) bool {
	return len(p) > 2 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}
