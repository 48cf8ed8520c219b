package site

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/test/peers/peerbuild"
	"github.com/myriarch/myriarch/test/peers/peerrun"
)

// PackageName is the catalog name of the test collector distribution.
const PackageName = "otelcol-myriarch"

// Site is one host's installation under Root, laid out like the install script does.
type Site struct {
	Root             string
	CollectorRoot    string // versions/<v>/…, current -> versions/<v>
	StorageDir       string // the supervisor's storage (persistent_state.yaml, agent.log)
	StateDir         string // the updater's state_dir
	SupervisorConfig string
	UpdaterConfig    string
	updater          *peerrun.Process
	LogDir           string
}

// Options describe a site.
type Options struct {
	Peers          *peerbuild.Peers
	Initial        string // collector version installed at the start
	ServerURL      string // ws://127.0.0.1:PORT/v1/opamp
	Token          string
	Attributes     map[string]string // site.* and deployment.environment.name
	MinisignPubKey string            // trusted by the updater ("": none pinned)
	// RootKeys, when set, are the updater's trust.root_keys: the estate's
	// signed keyring brings its signing keys.
	RootKeys     []string
	HealthWindow time.Duration
	// Providers, when set, is the updater config's providers: section.
	Providers map[string]any
	// OwnTelemetry lets the collector send its own telemetry where its
	// fleet asks (peerrun.SupervisorConfig.OwnTelemetry), with CollectorEnv.
	OwnTelemetry bool
	CollectorEnv map[string]string
	// Sigstore, when set, is the updater config's trust.sigstore section.
	Sigstore map[string]any
}

// New lays out a site under root: the initial collector in a versioned
// directory, current pointing at it, the supervisor and updater configs.
func New(root string, o Options) (*Site, error) {
	s := &Site{
		Root:             root,
		CollectorRoot:    filepath.Join(root, "opt", "collector"),
		StorageDir:       filepath.Join(root, "var", "lib", "otelcol", "supervisor"),
		StateDir:         filepath.Join(root, "var", "lib", "myriarch-updater"),
		SupervisorConfig: filepath.Join(root, "etc", "otelcol", "supervisor.yaml"),
		UpdaterConfig:    filepath.Join(root, "etc", "myriarch", "updater.yaml"),
		LogDir:           filepath.Join(root, "log"),
	}
	for _, d := range []string{s.CollectorRoot, s.StateDir, filepath.Dir(s.SupervisorConfig), filepath.Dir(s.UpdaterConfig), s.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(s.StorageDir, 0o700); err != nil {
		return nil, err
	}
	c, err := o.Peers.Collector(o.Initial)
	if err != nil {
		return nil, err
	}
	vdir := filepath.Join(s.CollectorRoot, "versions", o.Initial)
	if err := c.InstallTo(filepath.Join(vdir, peerbuild.CollectorExecutable)); err != nil {
		return nil, err
	}
	if err := os.Symlink(filepath.Join("versions", o.Initial), filepath.Join(s.CollectorRoot, "current")); err != nil {
		return nil, err
	}
	sup := peerrun.SupervisorConfig{
		ServerEndpoint:           o.ServerURL,
		Headers:                  map[string]string{"Authorization": "Bearer " + o.Token},
		Collector:                filepath.Join(s.CollectorRoot, "current", peerbuild.CollectorExecutable),
		StorageDir:               s.StorageDir,
		NonIdentifyingAttributes: o.Attributes,
		OwnTelemetry:             o.OwnTelemetry,
		AgentEnv:                 o.CollectorEnv,
	}
	if err := sup.WriteFile(s.SupervisorConfig); err != nil {
		return nil, err
	}
	hw := o.HealthWindow
	if hw == 0 {
		hw = 5 * time.Second
	}
	cfg := map[string]any{
		"server": map[string]any{"endpoint": o.ServerURL, "token": o.Token},
		"mode":   "binary",
		"supervisor": map[string]any{
			"storage_dir": s.StorageDir,
			"control":     "process",
			"command":     []string{o.Peers.Supervisor, "--config", s.SupervisorConfig},
		},
		"collector": map[string]any{
			"package":       PackageName,
			"root":          s.CollectorRoot,
			"executable":    peerbuild.CollectorExecutable,
			"health_window": hw.String(),
		},
		"trust":     map[string]any{"require_signature": true},
		"state_dir": s.StateDir,
		"log":       map[string]any{"level": "debug", "format": "json"},
	}
	if o.Providers != nil {
		cfg["providers"] = o.Providers
	}
	trust := cfg["trust"].(map[string]any)
	if o.MinisignPubKey != "" {
		trust["minisign_public_keys"] = []string{o.MinisignPubKey}
	}
	if len(o.RootKeys) > 0 {
		trust["root_keys"] = o.RootKeys
	}
	if o.Sigstore != nil {
		trust["sigstore"] = o.Sigstore
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.UpdaterConfig, buf.Bytes(), 0o600); err != nil {
		return nil, err
	}
	return s, nil
}

// StartUpdater runs `myriarch-updater run --config …` as its own process group.
func (s *Site) StartUpdater(bin string, env []string) (*peerrun.Process, error) {
	p, err := peerrun.Start(bin, []string{"run", "--config", s.UpdaterConfig}, env, filepath.Join(s.LogDir, fmt.Sprintf("updater-%d.log", time.Now().UnixNano())))
	if err != nil {
		return nil, err
	}
	s.updater = p
	return p, nil
}

// CollectorUID reads the supervisor's instance UID from persistent_state.yaml.
func (s *Site) CollectorUID() (string, error) {
	data, err := os.ReadFile(filepath.Join(s.StorageDir, "persistent_state.yaml"))
	if err != nil {
		return "", err
	}
	var st struct {
		InstanceID string `yaml:"instance_id"`
	}
	if err := yaml.Unmarshal(data, &st); err != nil {
		return "", err
	}
	if st.InstanceID == "" {
		return "", errors.New("persistent_state.yaml has no instance_id")
	}
	return st.InstanceID, nil
}

// WaitCollectorUID waits for the supervisor to write its instance UID.
func (s *Site) WaitCollectorUID(timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		uid, err := s.CollectorUID()
		if err == nil {
			return uid, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("supervisor state: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CurrentVersion is the version directory current points at.
func (s *Site) CurrentVersion() (string, error) {
	t, err := os.Readlink(filepath.Join(s.CollectorRoot, "current"))
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(filepath.Base(t), ""), nil
}

// RewriteUpdaterProviders replaces the providers: section of the updater's
// configuration (stop the updater first).
func (s *Site) RewriteUpdaterProviders(p map[string]any) error {
	data, err := os.ReadFile(s.UpdaterConfig)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return err
	}
	cfg["providers"] = p
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(s.UpdaterConfig, out, 0o600)
}
