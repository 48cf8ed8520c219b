// Package config holds the updater's configuration: the structs that mirror
// updater.yaml, their defaults (NewDefaultConfig), a strict loader that
// rejects unknown keys, and a validation walk that reports every problem at
// once with its YAML path and line.
package config

import (
	"time"

	"github.com/myriarch/myriarch/agent/providers"
)

// Supervisor control kinds (SupervisorConfig.Control).
const (
	ControlService = "service"
	ControlProcess = "process"
)

// Config is the whole updater.yaml.
type Config struct {
	Server     ServerConfig     `yaml:"server"`
	Mode       string           `yaml:"mode"`
	Supervisor SupervisorConfig `yaml:"supervisor"`
	Collector  CollectorConfig  `yaml:"collector"`
	Container  ContainerConfig  `yaml:"container"`
	Trust      TrustConfig      `yaml:"trust"`
	StateDir   string           `yaml:"state_dir"`
	Log        LogConfig        `yaml:"log"`
	Providers  providers.Config `yaml:"providers"`
}

// ServerConfig says where the OpAMP server is and how to authenticate.
type ServerConfig struct {
	// Endpoint is a ws, wss, http or https URL (http(s) selects OpAMP plain-HTTP polling).
	Endpoint string `yaml:"endpoint"`
	// Token is sent as "Authorization: Bearer <token>". At most one of Token and TokenFile.
	Token string `yaml:"token"`
	// TokenFile holds the token; it is read at every (re)connect so it can be rotated.
	TokenFile string    `yaml:"token_file"`
	TLS       TLSConfig `yaml:"tls"`
}

// TLSConfig configures the TLS client for wss/https endpoints.
type TLSConfig struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// SupervisorConfig says where the upstream OpAMP Supervisor keeps its state
// and how the updater controls it.
type SupervisorConfig struct {
	// StorageDir is the supervisor's storage.directory (holds persistent_state.yaml).
	// In container mode it is the host side of the collector container's
	// mounted storage directory.
	StorageDir string `yaml:"storage_dir"`
	// Control is "service" (restart the OS service Service) or "process"
	// (run Command as the updater's child).
	Control string   `yaml:"control"`
	Service string   `yaml:"service"`
	Command []string `yaml:"command"`
}

// CollectorConfig describes the collector installation the updater manages.
type CollectorConfig struct {
	// Package is the only package name accepted in offers.
	Package string `yaml:"package"`
	// Root holds versions/<version>/… and the current -> versions/<version> link.
	Root       string `yaml:"root"`
	Executable string `yaml:"executable"`
	// HealthWindow is how long a new collector must stay up to count as healthy.
	HealthWindow   time.Duration `yaml:"health_window"`
	MaxPackageSize ByteSize      `yaml:"max_package_size"`
}

// ContainerConfig is used in container mode.
type ContainerConfig struct {
	Name       string `yaml:"name"`
	DockerHost string `yaml:"docker_host"`
}

// TrustConfig is local policy for packages; the server can never change it.
type TrustConfig struct {
	// MinisignPublicKeys are the keys that may sign packages (minisign public key text).
	MinisignPublicKeys []string `yaml:"minisign_public_keys"`
	// MinisignKeys are keys that may sign only within a window: a key
	// rotated in before the old one's not_after, the old one refused after
	// it. An artifact signed only by an expired key is refused.
	MinisignKeys []MinisignKey `yaml:"minisign_keys"`
	// RootKeys are minisign keys that sign only the estate's keyring
	// (agent/keyring): the server offers it, and its keys are trusted and
	// its revoked keys refused (pinned ones included) once a root key
	// here verifies it. Rotating the signing key then touches no host.
	RootKeys []string `yaml:"root_keys"`
	// Sigstore, when set, checks packages signed with a Sigstore bundle
	// (the OpenTelemetry project's own releases): who may sign them.
	Sigstore         *SigstoreConfig `yaml:"sigstore"`
	RequireSignature bool            `yaml:"require_signature"`
	// AllowDowngrade admits offers of a version older than what runs that
	// this host never confirmed healthy. Going back to a version it ran
	// and confirmed healthy (recorded in state_dir/confirmed-versions.json,
	// container-confirmed-versions.json in container mode) needs none.
	AllowDowngrade bool `yaml:"allow_downgrade"`
	// DownloadHosts are the only hosts package downloads (and their
	// redirects) may go to: "host", "host:port" or "*.example.com". Empty
	// (the default) trusts any host the server names in an offer, which is
	// safe only as far as signatures are required.
	DownloadHosts []string `yaml:"download_hosts"`
	// TelemetryHosts are the only hosts the updater's own telemetry may be
	// sent to, in the same form. Empty (the default) sends it wherever the
	// server offers.
	TelemetryHosts []string `yaml:"telemetry_hosts"`
}

// MinisignKey is a key of trust.minisign_keys: the public key (its line or
// its .pub file) and when it may sign (RFC 3339 times; absent: no bound).
type MinisignKey struct {
	Key       string    `yaml:"key"`
	NotBefore time.Time `yaml:"not_before"`
	NotAfter  time.Time `yaml:"not_after"`
}

// SigstoreConfig is trust.sigstore: the identity that may sign (a
// certificate's subject alternative name, such as a release workflow on a
// tag) and its OIDC issuer, each exact or by regular expression, and the
// trusted root (default: the public-good instance's, built in).
type SigstoreConfig struct {
	Identity        string `yaml:"identity"`
	IdentityRegexp  string `yaml:"identity_regexp"`
	Issuer          string `yaml:"issuer"`
	IssuerRegexp    string `yaml:"issuer_regexp"`
	TrustedRootFile string `yaml:"trusted_root_file"`
	// RequireTlog (default true) requires a transparency-log entry,
	// verified offline from the bundle; RequireSCT (default true) a
	// certificate timestamp of a CT log in the certificate.
	RequireTlog *bool `yaml:"require_tlog"`
	RequireSCT  *bool `yaml:"require_sct"`
}

// LogConfig selects the log level (debug|info|warn|error) and format (text|json).
type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// NewDefaultConfig returns a Config with every default filled in. The server
// endpoint and credentials have no default: they are site specific.
func NewDefaultConfig() *Config {
	return &Config{
		Mode: ModeBinary,
		Supervisor: SupervisorConfig{
			StorageDir: defaultSupervisorStorageDir(),
			Control:    ControlService,
			Service:    "opampsupervisor",
		},
		Collector: CollectorConfig{
			Package:        "otelcol-contrib",
			Root:           defaultCollectorRoot(),
			Executable:     defaultCollectorExecutable(),
			HealthWindow:   30 * time.Second,
			MaxPackageSize: 1 << 30,
		},
		Container: ContainerConfig{
			Name:       "otelcol",
			DockerHost: defaultDockerHost(),
		},
		Trust: TrustConfig{
			RequireSignature: true,
		},
		StateDir: defaultStateDir(),
		Log:      LogConfig{Level: "info", Format: "text"},
	}
}

// DefaultPath is where the updater looks for its configuration by default.
func DefaultPath() string { return defaultConfigPath() }
