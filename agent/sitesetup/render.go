package sitesetup

import (
	"path/filepath"
	"regexp"
	"strings"
)

// q quotes v as a YAML double-quoted scalar.
func q(v string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`) + `"`
}

var (
	schemeRe   = regexp.MustCompile(`^[a-z]+://`)
	pathRe     = regexp.MustCompile(`[/?].*$`)
	bracketsRe = regexp.MustCompile(`^(\[.*\])(:\d*)?$`)
	portRe     = regexp.MustCompile(`:[^:]*$`)
	withPathRe = regexp.MustCompile(`^[a-z]+://[^/]+/.`)
)

// ServerHost is the host of the server URL (without user or port):
// package downloads come from it.
func (s *Settings) ServerHost() string {
	h := pathRe.ReplaceAllString(schemeRe.ReplaceAllString(s.Server, ""), "")
	if i := strings.LastIndex(h, "@"); i >= 0 {
		h = h[i+1:]
	}
	if m := bracketsRe.FindStringSubmatch(h); m != nil {
		return m[1]
	}
	return portRe.ReplaceAllString(h, "")
}

// Endpoint is the OpAMP endpoint: the server URL, with /v1/opamp when it
// has no path.
func (s *Settings) Endpoint() string {
	if withPathRe.MatchString(s.Server) {
		return s.Server
	}
	return strings.TrimRight(s.Server, "/") + "/v1/opamp"
}

const written = "# Written by myriarch-updater setup (install.ps1); re-run it to change this file.\n"

// lines is a configuration file being written, a line at a time.
type lines struct{ strings.Builder }

func (b *lines) w(ls ...string) {
	for _, l := range ls {
		b.WriteString(l + "\n")
	}
}

// SupervisorYAML is the upstream Supervisor's configuration.
func SupervisorYAML(s *Settings, l Layout) string {
	var b lines
	w := b.w
	b.WriteString(written)
	w("server:",
		"  endpoint: "+q(s.Endpoint()),
		"  headers:",
		`    Authorization: "Bearer `+s.Token+`"`,
		"capabilities:",
		"  accepts_remote_config: true",
		"  reports_remote_config: true",
		"  reports_effective_config: true",
		"  accepts_restart_command: true",
		"  reports_health: true",
		"  reports_heartbeat: true",
		"  # The collector sends its own telemetry only where its fleet names a destination.",
		"  reports_own_metrics: true",
		"  reports_own_logs: true",
		"  reports_own_traces: true",
		"storage:",
		"  directory: "+q(l.Storage),
		"agent:",
		"  executable: "+q(filepath.Join(l.CollDir, "current", CollectorExe)),
		"  description:",
		"    non_identifying_attributes:",
		"      site.id: "+q(s.SiteID),
		"      site.type: "+q(s.SiteType))
	if s.SiteName != "" {
		w("      site.name: " + q(s.SiteName))
	}
	w("      site.country: " + q(s.SiteCountry))
	if s.SiteRegion != "" {
		w("      site.region: " + q(s.SiteRegion))
	}
	w("      site.timezone: "+q(s.SiteTimezone),
		"      deployment.environment.name: "+q(s.Environment))
	return b.String()
}

// UpdaterYAML is myriarch-updater's configuration.
func UpdaterYAML(s *Settings, l Layout) string {
	var b lines
	w := b.w
	b.WriteString(written)
	w("server:",
		"  endpoint: "+q(s.Endpoint()),
		"  token_file: "+q(l.Token),
		"mode: "+s.Mode,
		"supervisor:",
		"  storage_dir: "+q(l.Storage))
	if s.Mode == "binary" {
		w("  control: service", "  service: "+SupervisorService)
	}
	w("collector:", "  package: "+CollectorPackage, "  root: "+q(l.CollDir), "  executable: "+CollectorExe)
	if s.Mode == "container" {
		w("container:", "  name: "+ContainerName)
	}
	w("trust:",
		"  # Going back to a collector version this host ran and confirmed healthy is allowed;",
		"  # an older version it never confirmed is refused unless allow_downgrade: true.",
		"  minisign_public_keys:",
		`    - "`+s.MinisignKey+`"`)
	if s.RootKey != "" {
		// The estate's keyring, signed by this root key, brings the signing keys and revocations.
		w("  root_keys:", `    - "`+s.RootKey+`"`)
	}
	w("  require_signature: true", "  download_hosts:", "    - "+q(s.ServerHost()))
	for _, m := range s.CatalogMirrors {
		w("    - " + q(m))
	}
	w("state_dir: " + q(l.State))
	return b.String()
}
