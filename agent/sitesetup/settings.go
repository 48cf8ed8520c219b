package sitesetup

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/myriarch/myriarch/agent/verify"
)

// Settings are a site's settings: install.ps1's flags, named here as
// install.sh names them (--site-id for -SiteId).
type Settings struct {
	Server           string
	Token            string // the token itself, or
	TokenFile        string // a file holding it
	SiteID           string
	SiteType         string
	SiteName         string
	SiteCountry      string
	SiteRegion       string
	SiteTimezone     string
	Environment      string
	Mode             string // binary or container
	CollectorVersion string // binary mode
	// Artifacts is the directory holding the artifacts, each beside its
	// .sha256 and .minisig (install.ps1 fetches them there).
	Artifacts   string
	MinisignKey string // RW… or a minisign .pub file
	RootKey     string // optional, the same forms
	// CatalogMirrors are more hosts packages may come from: host,
	// host:port or *.example.com.
	CatalogMirrors []string
	// Root installs under a prefix instead of %ProgramFiles% and
	// %ProgramData% (needs NoStart).
	Root    string
	NoStart bool
	DryRun  bool
}

// Fixed names of the site layout.
const (
	SupervisorService = "otelcol-supervisor"
	CollectorExe      = "otelcol-contrib.exe"
	CollectorPackage  = "otelcol-contrib"
	ContainerName     = "otelcol"
	maxValueLen       = 256
)

//go:embed iso3166.txt
var iso3166 string

//go:embed zones.txt
var ianaZones string

// Countries are the ISO 3166-1 alpha-2 codes (tzdata's iso3166.tab);
// Zones the IANA time zone names (tzdata's zones and links): Windows has
// its own zone names, so the list travels with the updater.
func Countries() []string { return strings.Fields(iso3166) }

// Zones lists the IANA time zone names a site may give.
func Zones() []string { return strings.Fields(ianaZones) }

var (
	serverRe   = regexp.MustCompile(`^(ws|wss|http|https)://`)
	hostRe     = regexp.MustCompile(`^[a-z]+://[^/?]+`)
	mirrorRe   = regexp.MustCompile(`^(\*\.)?[A-Za-z0-9.:\[\]-]+$`)
	tokenRe    = regexp.MustCompile(`^[A-Za-z0-9._~+/=-]+$`)
	versionRe  = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	controlRe  = regexp.MustCompile(`[\x00-\x1f\x7f]`)
	countryRe  = regexp.MustCompile(`^[A-Z]{2}$`)
	letters2Re = regexp.MustCompile(`^[A-Za-z]{2}$`)
	keyRe      = regexp.MustCompile(`^RW[A-Za-z0-9+/]{54}$`)
)

// Validate checks every setting and reports every problem, one a line,
// each naming its flag; it reads the token file and the key files, and
// resolves them into s (Token, MinisignKey, RootKey, CollectorVersion
// without a leading v).
func (s *Settings) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	text := func(flag, v string) bool {
		switch {
		case controlRe.MatchString(v):
			add("%s: must be one line without control characters", flag)
		case strings.Contains(v, "$"):
			add("%s %q: must not contain $ (the supervisor expands ${...} in its configuration)", flag, v)
		case len(v) > maxValueLen:
			add("%s: longer than %d characters", flag, maxValueLen)
		default:
			return true
		}
		return false
	}
	required := func(flag, v string) bool {
		if v == "" {
			add("%s is required", flag)
			return false
		}
		return text(flag, v)
	}
	if s.Root == "" && !s.NoStart && runtime.GOOS != "windows" {
		add("--no-start is required off Windows: services are registered with the Windows service manager only (install.sh sets up Linux hosts)")
	}
	if s.Root != "" && !s.NoStart {
		add("--root needs --no-start: services can only be registered on this system's root")
	}
	if s.Root != "" {
		if fi, err := os.Stat(s.Root); err == nil && !fi.IsDir() {
			add("--root %s: not a directory", s.Root)
		}
	}
	if s.Mode != "binary" && s.Mode != "container" {
		add("--mode %q: must be binary or container", s.Mode)
	}
	switch {
	case s.Server == "":
		add("--server is required")
	case controlRe.MatchString(s.Server):
		add("--server: must be one line without control characters")
	case strings.ContainsAny(s.Server, " \t\"$\\"):
		add("--server %q: must not contain spaces, quotes, $ or backslashes", s.Server)
	case !serverRe.MatchString(s.Server):
		add("--server %q: must be a ws://, wss://, http:// or https:// URL", s.Server)
	case !hostRe.MatchString(s.Server):
		add("--server %q: has no host", s.Server)
	}
	for _, m := range s.CatalogMirrors {
		if !mirrorRe.MatchString(m) || strings.HasSuffix(m, ":") {
			add("--catalog-mirrors %q: a host, host:port or *.example.com, not a URL", m)
		}
	}
	switch {
	case s.Token != "" && s.TokenFile != "":
		add("--token and --token-file: give only one of them")
	case s.TokenFile != "":
		b, err := os.ReadFile(s.TokenFile)
		if err != nil {
			add("--token-file %s: not a readable file", s.TokenFile)
			break
		}
		s.Token = strings.TrimSpace(string(b))
		if s.Token == "" {
			add("--token-file %s: the token is empty", s.TokenFile)
		}
	case s.Token == "":
		add("--token or --token-file is required")
	}
	if s.Token != "" && !tokenRe.MatchString(s.Token) {
		add("token: contains characters not allowed in a bearer token (allowed: A-Z a-z 0-9 - . _ ~ + / =)")
	}
	required("--site-id", s.SiteID)
	if required("--site-type", s.SiteType) && s.SiteType != strings.ToLower(s.SiteType) {
		add("--site-type %q: must be lower case (%s)", s.SiteType, strings.ToLower(s.SiteType))
	}
	if s.SiteName != "" {
		text("--site-name", s.SiteName)
	}
	if s.SiteRegion != "" {
		text("--site-region", s.SiteRegion)
	}
	if required("--site-country", s.SiteCountry) {
		switch {
		case letters2Re.MatchString(s.SiteCountry) && !countryRe.MatchString(s.SiteCountry):
			add("--site-country %q: must be upper case (%s)", s.SiteCountry, strings.ToUpper(s.SiteCountry))
		case !countryRe.MatchString(s.SiteCountry):
			add("--site-country %q: must be an ISO 3166-1 alpha-2 code (two upper-case letters, e.g. DE)", s.SiteCountry)
		case !slices.Contains(Countries(), s.SiteCountry):
			add("--site-country %q: not an ISO 3166-1 alpha-2 country code", s.SiteCountry)
		}
	}
	if required("--site-timezone", s.SiteTimezone) && !slices.Contains(Zones(), s.SiteTimezone) {
		add("--site-timezone %q: not an IANA time zone (e.g. Europe/Amsterdam)", s.SiteTimezone)
	}
	required("--environment", s.Environment)
	if s.Mode == "binary" {
		s.CollectorVersion = strings.TrimPrefix(s.CollectorVersion, "v")
		switch {
		case s.CollectorVersion == "":
			add("--collector-version is required in binary mode")
		case !versionRe.MatchString(s.CollectorVersion):
			add("--collector-version %q: must be a version like 0.149.0", s.CollectorVersion)
		}
	}
	if s.Artifacts == "" {
		add("--artifacts is required")
	} else if fi, err := os.Stat(s.Artifacts); err != nil || !fi.IsDir() {
		add("--artifacts %s: no such directory", s.Artifacts)
	}
	if s.MinisignKey == "" {
		add("--minisign-key is required")
	} else if k, err := minisignKey("--minisign-key", s.MinisignKey); err != nil {
		errs = append(errs, err)
	} else {
		s.MinisignKey = k
	}
	if s.RootKey != "" {
		if k, err := minisignKey("--root-key", s.RootKey); err != nil {
			errs = append(errs, err)
		} else {
			s.RootKey = k
		}
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		add("unsupported processor architecture %s (supported: amd64, arm64)", runtime.GOARCH)
	}
	return errors.Join(errs...)
}

// minisignKey is the public key (RW…) v is, or the one in the .pub file v
// names.
func minisignKey(flag, v string) (string, error) {
	key := v
	if fi, err := os.Stat(v); err == nil && !fi.IsDir() {
		b, err := os.ReadFile(v)
		if err != nil {
			return "", fmt.Errorf("%s %s: %w", flag, v, err)
		}
		key = ""
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "untrusted comment:") {
				key = line
				break
			}
		}
	}
	if !keyRe.MatchString(key) {
		return "", fmt.Errorf("%s: not a minisign public key (RW followed by 54 base64 characters) nor a file holding one", flag)
	}
	if _, err := verify.ParseKeys([]string{key}); err != nil {
		return "", fmt.Errorf("%s: not a minisign public key: %w", flag, err)
	}
	return key, nil
}
