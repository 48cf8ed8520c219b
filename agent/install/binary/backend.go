package binary

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/loopback"
)

// Kind names collector-binary transactions in the journal.
const Kind = "collector"

// Controller is the part of supervisor control the back-end needs
// (agent/supervisor.Controller satisfies it).
//
// Start on a running supervisor and Stop on a stopped one are no-ops. Stop
// returns only when the supervisor and its collector are gone (the upstream
// supervisor must be stopped with SIGINT). Both are bounded by ctx.
type Controller interface {
	Stop(ctx context.Context) error
	Start(ctx context.Context) error
	// PID is the supervisor's process ID, 0 when it is not running.
	PID() int
}

// Options mirror the collector.* and supervisor.* settings the back-end
// uses (the shared ones are install.Options).
type Options struct {
	Package    string // collector.package: the Addon it installs
	Root       string // collector.root: holds versions/ and current
	Executable string // collector.executable: file name inside a version dir
	// StorageDir is the supervisor's storage.directory (its agent.log is
	// kept when a version fails).
	StorageDir string
	// HealthcheckURL is the supervisor's healthcheck.endpoint as a URL
	// (http://127.0.0.1:port/...), "" when it has none. Loopback only.
	HealthcheckURL string
	// MaxCollectorStarts: more distinct collector processes than this during
	// the health gate is a crash loop (default 3: the upstream supervisor
	// starts the collector for feature gates, bootstrap, and real).
	MaxCollectorStarts int
}

// Validate reports every invalid option.
func (o Options) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.Package == "" {
		add("collector.package: required")
	} else if o.Package == install.SelfPackage {
		add("collector.package: %q is reserved for the updater itself", install.SelfPackage)
	}
	for _, p := range []struct{ name, path string }{{"collector.root", o.Root}, {"supervisor.storage_dir", o.StorageDir}} {
		if p.path == "" {
			add("%s: required", p.name)
		} else if !filepath.IsAbs(p.path) {
			add("%s: must be an absolute path, got %q", p.name, p.path)
		}
	}
	if o.Executable == "" || strings.ContainsAny(o.Executable, `/\`) {
		add("collector.executable: must be a file name, got %q", o.Executable)
	}
	if o.HealthcheckURL != "" {
		if err := loopback.CheckURL(o.HealthcheckURL); err != nil {
			add("supervisor healthcheck endpoint: %v", err)
		}
	}
	if o.MaxCollectorStarts < 0 {
		add("max collector starts: must be positive, got %d", o.MaxCollectorStarts)
	}
	return errors.Join(errs...)
}

// Backend installs collector binaries: a version is unpacked into
// <root>/versions/<version>-<sha8>, checked with `--version`, and activated
// by stopping the supervisor, switching <root>/current to it and starting
// the supervisor again.
type Backend struct {
	o   Options
	ctl Controller
	env install.Env
	log *slog.Logger
	// crashLog is the tail of agent.log the health gate last read when a
	// collector process of the version it judges ended: the Supervisor
	// truncates agent.log at each collector start, so a rollback that
	// stops it just after a restart finds the file empty. Used by the
	// transaction's one goroutine (Gate, then Rollback).
	crashLog []byte
}

var _ install.Backend = (*Backend)(nil)

// New checks opts and returns the back-end; ctl controls the supervisor.
func New(opts Options, ctl Controller) (*Backend, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if ctl == nil {
		return nil, errors.New("binary: a supervisor Controller is required")
	}
	if opts.MaxCollectorStarts == 0 {
		opts.MaxCollectorStarts = 3
	}
	return &Backend{o: opts, ctl: ctl, log: slog.New(slog.DiscardHandler)}, nil
}

// Provision implements install.Provisioner.
func (b *Backend) Provision(env install.Env) error {
	b.env, b.log = env, env.Log
	if err := os.MkdirAll(filepath.Join(b.o.Root, "versions"), 0o755); err != nil {
		return fmt.Errorf("binary: %w", err)
	}
	return nil
}

// Describe implements install.Backend.
func (b *Backend) Describe() install.Description {
	return install.Description{Package: b.o.Package, Type: protobufs.PackageType_PackageType_Addon, Kind: Kind, CrashPoints: CrashPoints}
}

func (b *Backend) versionDir(dir string) string { return filepath.Join(b.o.Root, "versions", dir) }
func (b *Backend) exeIn(dir string) string      { return filepath.Join(b.versionDir(dir), b.o.Executable) }
