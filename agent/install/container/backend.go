package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"regexp"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/loopback"
)

// Kind names container transactions in the journal.
const Kind = "container"

// StatePrefix is what container mode puts before the engine's file names
// (install.Options.StatePrefix), so a host that switched modes never mixes
// binary-mode state with container state.
const StatePrefix = "container-"

// VersionLabel is the image label that names the collector version.
const VersionLabel = "org.opencontainers.image.version"

// NextSuffix is appended to the container name for the new container while
// the swap runs.
const NextSuffix = "-next"

// NoSelfUpdate is why container mode refuses TopLevel offers of the updater
// (install.Options.NoSelfUpdate).
const NoSelfUpdate = "in container mode the updater is replaced with its own image, not by an offer"

// Options mirror the container.* and collector.* settings the back-end
// uses (the shared ones are install.Options).
type Options struct {
	// Name is container.name: the collector container to manage.
	Name string
	// DockerHost is container.docker_host ("" = DOCKER_HOST or the default socket).
	DockerHost string
	// Package is collector.package: the Addon it installs.
	Package string
	// StorageDir is the supervisor's storage directory as seen INSIDE the
	// container. When set it must be on a volume or bind mount, and the
	// instance UID in its persistent_state.yaml must survive the swap.
	StorageDir string
	// HealthcheckURL is the supervisor's health endpoint (loopback only:
	// the collector container uses host networking); "" when none.
	HealthcheckURL string
	// PullTimeout bounds a registry pull (default 15 min).
	PullTimeout time.Duration
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
		switch u, err := url.Parse(o.DockerHost); {
		case err != nil, u.Scheme != "unix" && u.Scheme != "npipe" && u.Scheme != "tcp" && u.Scheme != "http" && u.Scheme != "https":
			add("container.docker_host: must be a unix://, npipe://, tcp:// or http(s):// URL, got %q", o.DockerHost)
		}
	}
	if o.Package == "" {
		add("collector.package: required")
	}
	if o.StorageDir != "" && !path.IsAbs(o.StorageDir) {
		add("supervisor.storage_dir: must be an absolute path inside the container, got %q", o.StorageDir)
	}
	if o.HealthcheckURL != "" {
		if err := loopback.CheckURL(o.HealthcheckURL); err != nil {
			add("supervisor healthcheck endpoint: %v", err)
		}
	}
	if o.PullTimeout < 0 {
		add("container pull timeout: must be positive, got %s", o.PullTimeout)
	}
	return errors.Join(errs...)
}

// Backend replaces the collector container: the new image runs in a new
// container created with the old one's settings, started before the old one
// is removed.
type Backend struct {
	o      Options
	docker *client.Client
	env    install.Env
	log    *slog.Logger
	cur    *swap // the transaction under way; the worker's only

	mu    sync.Mutex
	image *ImageInfo // guarded by mu; what <name> runs, nil while unknown
}

var _ install.Backend = (*Backend)(nil)

// New checks opts and connects a Docker client (the API version is
// negotiated on first use, so engines from API 1.41 up work). It touches
// no container.
func New(opts Options) (*Backend, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.PullTimeout == 0 {
		opts.PullTimeout = 15 * time.Minute
	}
	dc, err := NewClient(opts.DockerHost)
	if err != nil {
		return nil, err
	}
	return &Backend{o: opts, docker: dc, log: slog.New(slog.DiscardHandler)}, nil
}

// NewClient returns a Docker Engine API client for host ("" = DOCKER_HOST
// or the default socket); the API version is negotiated on first use.
func NewClient(host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	dc, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("container: docker client: %w", err)
	}
	return dc, nil
}

// Provision implements install.Provisioner.
func (b *Backend) Provision(env install.Env) error {
	b.env, b.log = env, env.Log.With("container", b.o.Name)
	return nil
}

// Describe implements install.Backend.
func (b *Backend) Describe() install.Description {
	return install.Description{Package: b.o.Package, Type: protobufs.PackageType_PackageType_Addon, Kind: Kind, CrashPoints: CrashPoints}
}

// Close closes the Docker client.
func (b *Backend) Close() error { return b.docker.Close() }

// Image returns what the collector container runs, as last seen (at start
// and after every swap); ok is false while unknown.
func (b *Backend) Image() (ImageInfo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.image == nil {
		return ImageInfo{}, false
	}
	return *b.image, true
}

func (b *Backend) setImage(img *ImageInfo) {
	b.mu.Lock()
	b.image = img
	b.mu.Unlock()
}

// Running implements install.Backend: what <name> runs.
func (b *Backend) Running(ctx context.Context) (install.Installed, error) {
	info, err := b.refreshImage(ctx)
	if err != nil {
		return install.Installed{}, err
	}
	return install.Installed{Version: info.Version, Hash: info.Hash, OfferHash: info.OfferHash}, nil
}

func (b *Backend) nextName() string { return b.o.Name + NextSuffix }
