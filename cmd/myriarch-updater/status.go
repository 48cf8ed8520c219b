package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	kservice "github.com/kardianos/service"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/identity"
	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/keyring"
	"github.com/myriarch/myriarch/agent/modes"
	"github.com/myriarch/myriarch/agent/service"
	"github.com/myriarch/myriarch/agent/supervisorstate"
	"github.com/myriarch/myriarch/agent/updater"
	"github.com/myriarch/myriarch/internal/buildinfo"
	ikeyring "github.com/myriarch/myriarch/internal/keyring"
	"github.com/myriarch/myriarch/internal/yamlstrict"
)

// serviceStatus is what status needs of the OS service (service.Manager).
type serviceStatus interface {
	Status() (string, error)
	Platform() string
}

// statusReport is what `status` prints (`--json`: this, as JSON).
type statusReport struct {
	Service    serviceReport    `json:"service"`
	Config     string           `json:"config"`
	Mode       string           `json:"mode"`
	StateDir   string           `json:"state_dir"`
	Server     serverReport     `json:"server"`
	Updater    updaterReport    `json:"updater"`
	Collector  collectorReport  `json:"collector"`
	Supervisor supervisorReport `json:"supervisor"`
	Install    installReport    `json:"install"`
	// Notes explain what is absent (nothing recorded yet); Problems are
	// what could not be read, and make status exit 1.
	Notes    []string `json:"notes,omitempty"`
	Problems []string `json:"problems,omitempty"`

	deniedNoted bool
}

type serviceReport struct {
	Name     string `json:"name"`
	State    string `json:"state"` // running, stopped, not installed, unavailable, unknown
	Platform string `json:"platform,omitempty"`
}

type serverReport struct {
	Endpoint   string              `json:"endpoint"`
	Connection *updater.Connection `json:"connection"` // nil: not recorded, or unreadable (a problem)
	unreadable bool
}

type updaterReport struct {
	Version     string                     `json:"version"` // of this binary
	InstanceUID string                     `json:"instance_uid,omitempty"`
	SelfUpdate  *install.SelfUpdatePending `json:"self_update_pending,omitempty"`
	// Keyring is the signed keyring kept in the state dir (with
	// trust.root_keys only).
	Keyring *keyringReport `json:"keyring,omitempty"`
}

type keyringReport struct {
	Serial uint64 `json:"serial"` // 0: none yet
	// Problem says why the kept keyring is not in force.
	Problem string `json:"problem,omitempty"`
}

type collectorReport struct {
	Version     string `json:"version,omitempty"`
	InstanceUID string `json:"instance_uid,omitempty"`
	// FoundRunning says the updater found this version, it did not install it.
	FoundRunning bool   `json:"found_running,omitempty"`
	Image        string `json:"image,omitempty"` // container mode: the image reference
	ImageDigest  string `json:"image_digest,omitempty"`
}

type supervisorReport struct {
	StateFile          string `json:"state_file"`
	StateFound         bool   `json:"state_found"`
	RemoteConfigStatus string `json:"remote_config_status,omitempty"` // APPLIED, APPLYING, FAILED, UNSET
	RemoteConfigHash   string `json:"remote_config_hash,omitempty"`
	RemoteConfigError  string `json:"remote_config_error,omitempty"`
}

type installReport struct {
	// InProgress is the unfinished install transaction: the offer being
	// installed (or rolled back), nil when none is.
	InProgress *inProgressReport `json:"in_progress"`
	// AllPackagesHash identifies the offer the last results answer.
	AllPackagesHash string `json:"all_packages_hash,omitempty"`
	// LastResults are the last terminal package statuses reported.
	LastResults []resultReport `json:"last_results"`
}

type inProgressReport struct {
	Kind        string    `json:"kind"` // collector, container or self
	Package     string    `json:"package"`
	Version     string    `json:"version"`
	PrevVersion string    `json:"prev_version,omitempty"`
	Step        string    `json:"step"`
	Reason      string    `json:"rollback_reason,omitempty"`
	Started     time.Time `json:"started"`
	Updated     time.Time `json:"updated"`
}

type resultReport struct {
	Package        string `json:"package"`
	Status         string `json:"status"` // installed, install failed, installing, install pending, downloading
	OfferedVersion string `json:"offered_version,omitempty"`
	HasVersion     string `json:"has_version,omitempty"`
	Error          string `json:"error,omitempty"`
}

// cmdStatus prints the service state and what the state dir records. It
// exits 0 when everything it looks at could be read (absent is fine: not
// installed, never run, nothing installed yet) and 1 when something could
// not (the config, the service manager, a corrupt state file); the report
// is printed either way.
func cmdStatus(path string, asJSON bool, stdout, stderr io.Writer, newService func(string) (serviceStatus, error)) int {
	r := gatherStatus(path, newService)
	var err error
	if asJSON {
		err = writeJSON(stdout, r)
	} else {
		err = printStatus(stdout, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "myriarch-updater status: %v\n", err)
		return 1
	}
	if len(r.Problems) > 0 {
		return 1
	}
	return 0
}

func gatherStatus(path string, newService func(string) (serviceStatus, error)) *statusReport {
	r := &statusReport{Config: path}
	if abs, err := filepath.Abs(path); err == nil {
		path, r.Config = abs, abs
	}
	r.Service = serviceState(path, newService, r)

	cfg, err := config.LoadPartial(path)
	if err != nil {
		r.problem("config: %v", err)
	}
	if cfg == nil {
		cfg = config.NewDefaultConfig()
		r.note("showing the default state and storage directories")
	} else if _, statErr := os.Stat(path); errors.Is(statErr, fs.ErrNotExist) {
		r.Config = "from the environment (no file " + path + ")"
	}
	r.Mode, r.StateDir = cfg.Mode, cfg.StateDir
	r.Server.Endpoint = cfg.Server.Endpoint
	r.Updater.Version = buildinfo.Version

	if _, err := os.Stat(cfg.StateDir); errors.Is(err, fs.ErrNotExist) {
		r.note("state dir %s does not exist: the updater has not run with this configuration", cfg.StateDir)
	} else {
		readStateDir(cfg, r)
	}
	readSupervisorState(cfg, r)
	return r
}

func serviceState(path string, newService func(string) (serviceStatus, error), r *statusReport) serviceReport {
	s := serviceReport{Name: service.Name}
	m, err := newService(path)
	switch {
	case errors.Is(err, kservice.ErrNoServiceSystemDetected):
		s.State = "unavailable"
		r.note("no service manager on this host (a container?): the updater runs in the foreground")
		return s
	case err != nil:
		s.State = "unknown"
		r.problem("service: %v", err)
		return s
	}
	s.Platform = m.Platform()
	if s.State, err = m.Status(); err != nil {
		r.problem("service: %v", err)
	}
	return s
}

// readStateDir fills in what the updater's own files record.
func readStateDir(cfg *config.Config, r *statusReport) {
	dir := cfg.StateDir
	if id, err := identity.Load(dir); err == nil {
		r.Updater.InstanceUID = id.String()
	} else if !errors.Is(err, fs.ErrNotExist) {
		r.problem("%v", err)
	}

	if c, err := updater.ReadConnection(dir); err != nil {
		r.problem("%v", err)
		r.Server.unreadable = true
	} else {
		r.Server.Connection = c
	}

	if len(cfg.Trust.RootKeys) > 0 {
		r.Updater.Keyring = readKeyring(cfg, r)
	}
	m, err := modes.Lookup(cfg.Mode)
	if err != nil {
		r.problem("%v", err)
		return
	}
	// install.ReadStatus only reads: no lock, nothing created, so status
	// is safe while the service runs.
	st, err := install.ReadStatus(dir, m.State)
	for _, e := range yamlstrict.Flatten(err) {
		r.problem("%v", e)
	}
	r.Updater.SelfUpdate = st.SelfUpdate
	if in := st.Installed; in != nil {
		r.Collector.Version, r.Collector.FoundRunning = in.Version, in.Hash == ""
		r.Collector.Image, r.Collector.ImageDigest = in.Ref, in.Digest
	}
	if rec := st.InProgress; rec != nil {
		r.Install.InProgress = &inProgressReport{
			Kind: rec.Kind, Package: rec.Package, Version: rec.Version, PrevVersion: rec.PrevVersion,
			Step: rec.Step, Reason: rec.Reason, Started: rec.Started, Updated: rec.Updated,
		}
	}
	r.Install.LastResults = results(st.Statuses)
	if h := st.Statuses.GetServerProvidedAllPackagesHash(); len(h) > 0 {
		r.Install.AllPackagesHash = hex.EncodeToString(h)
	}
}

// readKeyring reads the kept keyring (only reading, as keyring.Open does).
func readKeyring(cfg *config.Config, r *statusReport) *keyringReport {
	ring, err := keyring.Open(cfg.StateDir, cfg.Trust.RootKeys)
	if err != nil {
		r.problem("%v", err)
		return nil
	}
	a := ring.Attributes()
	k := &keyringReport{Serial: ring.Serial(), Problem: a[ikeyring.AttrRefused]}
	if k.Problem != "" {
		r.problem("keyring: %s", k.Problem)
	}
	return k
}

func results(st *protobufs.PackageStatuses) []resultReport {
	out := []resultReport{}
	for name, p := range st.GetPackages() {
		out = append(out, resultReport{
			Package: name, Status: statusWords(p.GetStatus()), OfferedVersion: p.GetServerOfferedVersion(),
			HasVersion: p.GetAgentHasVersion(), Error: p.GetErrorMessage(),
		})
	}
	slices.SortFunc(out, func(a, b resultReport) int { return strings.Compare(a.Package, b.Package) })
	return out
}

func statusWords(s protobufs.PackageStatusEnum) string {
	switch s {
	case protobufs.PackageStatusEnum_PackageStatusEnum_Installed:
		return "installed"
	case protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending:
		return "install pending"
	case protobufs.PackageStatusEnum_PackageStatusEnum_Installing:
		return "installing"
	case protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed:
		return "install failed"
	case protobufs.PackageStatusEnum_PackageStatusEnum_Downloading:
		return "downloading"
	}
	return strings.TrimPrefix(s.String(), "PackageStatusEnum_")
}

// readSupervisorState reads the supervisor's persistent_state.yaml: the
// collector's instance UID and the last remote config status.
func readSupervisorState(cfg *config.Config, r *statusReport) {
	r.Supervisor.StateFile = supervisorstate.Path(cfg.Supervisor.StorageDir)
	st, err := supervisorstate.Read(cfg.Supervisor.StorageDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.note("%s does not exist yet: the supervisor has not started", r.Supervisor.StateFile)
		return
	case err != nil:
		r.problem("%v", err)
		return
	}
	r.Supervisor.StateFound = true
	r.Collector.InstanceUID = st.InstanceID
	if rc := st.LastRemoteConfigStatus; rc != nil {
		r.Supervisor.RemoteConfigStatus = strings.TrimPrefix(protobufs.RemoteConfigStatuses(rc.Status).String(), "RemoteConfigStatuses_")
		r.Supervisor.RemoteConfigHash = rc.LastRemoteConfigHash
		r.Supervisor.RemoteConfigError = rc.ErrorMessage
	}
}

func (r *statusReport) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *statusReport) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, fs.ErrPermission) && !r.deniedNoted {
			r.deniedNoted = true
			r.note("the state is readable by the service's user only: run status as root (Administrator on Windows)")
		}
	}
}
