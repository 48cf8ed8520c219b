// Package binarymode is the binary collector mode: the collector binary
// runs under the upstream OpAMP Supervisor, which the updater controls as
// an OS service or runs as its child (supervisor.control); offers of the
// collector are installed by agent/install/binary and offers of the updater
// itself by agent/install/selfupdate.
package binarymode

import (
	"log/slog"
	"path/filepath"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/binary"
	"github.com/myriarch/myriarch/agent/install/selfupdate"
	"github.com/myriarch/myriarch/agent/mode"
	"github.com/myriarch/myriarch/agent/supervisor"
	"github.com/myriarch/myriarch/internal/buildinfo"
)

// Mode is binary mode.
func Mode() mode.Mode { return mode.Mode{State: binary.Layout(), New: New} }

// New builds binary mode's Runtime for cfg: the supervisor controller that
// supervisor.control selects.
func New(cfg *config.Config, log *slog.Logger) (mode.Runtime, error) {
	ctl, err := supervisor.New(cfg.Supervisor, log)
	if err != nil {
		return nil, err
	}
	return &runtime{cfg: cfg, ctl: ctl}, nil
}

type runtime struct {
	cfg *config.Config
	ctl supervisor.Controller
}

var _ mode.Runtime = (*runtime)(nil)

// NewEngine installs the collector binary and the updater itself.
func (r *runtime) NewEngine(o install.Options, log *slog.Logger, restart func(string)) (*install.Engine, error) {
	bin, err := binary.New(binary.Options{
		Package:    r.cfg.Collector.Package,
		Root:       r.cfg.Collector.Root,
		Executable: r.cfg.Collector.Executable,
		StorageDir: r.cfg.Supervisor.StorageDir,
	}, r.ctl)
	if err != nil {
		return nil, err
	}
	self, err := selfupdate.NewBackend(selfupdate.Options{Version: buildinfo.Version, RequestRestart: restart})
	if err != nil {
		return nil, err
	}
	o.StatePrefix = binary.Layout().Prefix
	return install.New(o, log, bin, self)
}

func (r *runtime) Supervisor() supervisor.Controller { return r.ctl }

// Attributes names the OS service, or with process control the supervisor
// executable.
func (r *runtime) Attributes() map[string]string {
	s := r.cfg.Supervisor
	name := s.Service
	if s.Control == config.ControlProcess && len(s.Command) > 0 {
		name = filepath.Base(s.Command[0])
	}
	return map[string]string{mode.AttrSupervisorService: name}
}
