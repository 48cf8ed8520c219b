package main

import (
	"github.com/myriarch/myriarch/internal/adminclient"

	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/oidclogin"
)

// defaultDataDir is where the server keeps its state, and where the client
// commands read the generated admin token (the packaged unit's
// StateDirectory=myriarch).
const defaultDataDir = adminclient.DefaultDataDir

// serveConfig is everything `myriarchd serve` is configured with.
type serveConfig struct {
	server.Options
	ConfigFile string
	LogFormat  string
	LogLevel   string
}

func defaultServeConfig() serveConfig {
	return serveConfig{
		Options: server.Options{
			DataDir:     defaultDataDir,
			Store:       server.StoreSQLite,
			Listen:      "127.0.0.1:4320",
			AdminListen: "127.0.0.1:4321",
			Heartbeat:   30 * time.Second,
			// A site enrolling more hosts at once with one token sees them
			// registered over a few minutes.
			RegistrationsPerMinute: 1000,
			PruneAfter:             30 * 24 * time.Hour,
			NotificationWindow:     30 * time.Second,
			OIDC:                   oidclogin.Settings{RoleClaim: oidclogin.DefaultRoleClaim, Name: oidclogin.DefaultName},
		},
		LogFormat: "text",
		LogLevel:  "info",
	}
}

// setting is one of serve's settings: a flag, an environment variable
// (MYRIARCH_ and the upper-case key) and a config file key (the flag's name
// with _ for -). This table is the only list of them: the flags, the
// variables, the file's keys and the reference (`myriarchd help config`)
// all come from it.
type setting struct {
	flag  string
	arg   string // the value's placeholder in help; "" for a boolean
	usage string
	field func(*serveConfig) any // *string, *bool or *time.Duration
	// choices, when set, are the only values allowed (case-insensitive).
	choices []string
	// noFile: not a key of the config file (the file's own path).
	noFile bool
	// fileOnly: only a key of the config file, neither a flag nor a
	// variable (a mapping).
	fileOnly bool
}

var settings = []setting{
	{flag: "config", arg: "FILE", noFile: true,
		usage: "YAML config file holding any of the other settings",
		field: func(c *serveConfig) any { return &c.ConfigFile }},
	{flag: "data-dir", arg: "DIR",
		usage: "state directory (SQLite database, generated admin token)",
		field: func(c *serveConfig) any { return &c.DataDir }},
	{flag: "store", arg: "STORE",
		usage: "where state is kept: sqlite (a file in --data-dir) or a postgres://user@host/db URL that several instances share",
		field: func(c *serveConfig) any { return &c.Store }},
	{flag: "listen", arg: "ADDR",
		usage: "OpAMP listen address (path /v1/opamp) and artifact downloads; not loopback needs TLS or --insecure-listen",
		field: func(c *serveConfig) any { return &c.Listen }},
	{flag: "admin-listen", arg: "ADDR",
		usage: "admin API listen address (also /metrics, /healthz, /readyz); plain HTTP: not loopback is warned about",
		field: func(c *serveConfig) any { return &c.AdminListen }},
	{flag: "estate", arg: "DIR",
		usage: "estate directory (inventory, fleets, packages, Blueprints under teams/); none: no fleets",
		field: func(c *serveConfig) any { return &c.Estate }},
	{flag: "estate-poll", arg: "DURATION",
		usage: "reload the estate when its revision (Git HEAD or a digest of its files) changes, checked this often; 0: off",
		field: func(c *serveConfig) any { return &c.EstatePoll }},
	{flag: "tls-cert", arg: "FILE",
		usage: "TLS certificate (PEM) for the OpAMP listener",
		field: func(c *serveConfig) any { return &c.TLSCert }},
	{flag: "tls-key", arg: "FILE",
		usage: "TLS private key (PEM) for the OpAMP listener",
		field: func(c *serveConfig) any { return &c.TLSKey }},
	{flag: "client-ca", arg: "FILE",
		usage: "CA bundle for agents' client certificates (mutual TLS; needs --tls-cert)",
		field: func(c *serveConfig) any { return &c.ClientCA }},
	{flag: "admin-token-file", arg: "FILE",
		usage: "admin token file (default <data-dir>/admin.token, generated on first start)",
		field: func(c *serveConfig) any { return &c.AdminTokenFile }},
	{flag: "public-url", arg: "URL",
		usage: "base URL agents reach the OpAMP listener at, for artifact URLs (default from --listen)",
		field: func(c *serveConfig) any { return &c.PublicURL }},
	{flag: "heartbeat", arg: "DURATION",
		usage: "heartbeat interval offered to agents",
		field: func(c *serveConfig) any { return &c.Heartbeat }},
	{flag: "registrations-per-minute", arg: "N",
		usage: "new agents (instance UIDs) one credential may register per minute, a burst of as many; more are told to retry later; 0: no bound",
		field: func(c *serveConfig) any { return &c.RegistrationsPerMinute }},
	{flag: "prune-after", arg: "DURATION",
		usage: "forget agents offline for longer than this (each logged); 0: keep them",
		field: func(c *serveConfig) any { return &c.PruneAfter }},
	{flag: "audit-retention", arg: "DURATION",
		usage: "cut audit records older than this (whole prefixes, each cut recorded in the trail), at start and then hourly; 0: keep them forever",
		field: func(c *serveConfig) any { return &c.AuditRetention }},
	{flag: "notification-window", arg: "DURATION",
		usage: "gather the occurrences of an event of a fleet this long into one webhook body",
		field: func(c *serveConfig) any { return &c.NotificationWindow }},
	{flag: "log-format", arg: "FORMAT", choices: []string{"text", "json"},
		usage: "log format",
		field: func(c *serveConfig) any { return &c.LogFormat }},
	{flag: "log-level", arg: "LEVEL", choices: []string{"debug", "info", "warn", "error"},
		usage: "lowest level logged",
		field: func(c *serveConfig) any { return &c.LogLevel }},
	{flag: "insecure-listen",
		usage: "allow plain-text OpAMP on a --listen address that is not loopback (TLS ends in front of myriarchd)",
		field: func(c *serveConfig) any { return &c.InsecureListen }},
	{flag: "oidc-issuer", arg: "URL",
		usage: "sign console operators in with this OpenID Connect provider: its issuer URL, https (http only on this host); none: no such sign-in",
		field: func(c *serveConfig) any { return &c.OIDC.Issuer }},
	{flag: "oidc-client-id", arg: "ID",
		usage: "myriarchd's client id at the provider, the audience of the ID tokens it accepts",
		field: func(c *serveConfig) any { return &c.OIDC.ClientID }},
	{flag: "oidc-client-secret-file", arg: "FILE",
		usage: "file holding the client's secret, which no flag carries; refused when other users may change it",
		field: func(c *serveConfig) any { return &c.OIDC.ClientSecretFile }},
	{flag: "oidc-role-claim", arg: "NAME",
		usage: "claim of the ID token whose values oidc_roles maps to roles: a string or a list of strings",
		field: func(c *serveConfig) any { return &c.OIDC.RoleClaim }},
	{flag: "oidc-name", arg: "NAME",
		usage: "the provider's name on the login page's button",
		field: func(c *serveConfig) any { return &c.OIDC.Name }},
	{flag: "oidc-redirect-url", arg: "URL",
		usage: "where the provider sends the browser back to, as registered there: the console's /login/oidc/callback (default http://<admin-listen>/login/oidc/callback; behind a proxy, the proxy's URL)",
		field: func(c *serveConfig) any { return &c.OIDC.RedirectURL }},
	{flag: "oidc-roles", fileOnly: true,
		usage: "values of the role claim mapped to roles, each a role name or {role: ROLE, fleets: [FLEET, ...]}; a sign-in gets the highest role its values map to (equal roles: the union of their fleets)",
		field: func(c *serveConfig) any { return &c.OIDC.Roles }},
}

// key is the setting's config file key.
func (s *setting) key() string { return strings.ReplaceAll(s.flag, "-", "_") }

// env is the setting's environment variable.
func (s *setting) env() string {
	return "MYRIARCH_" + strings.ToUpper(strings.ReplaceAll(s.flag, "-", "_"))
}

// allows reports whether v is one of the choices (any value when there are none).
func (s *setting) allows(v string) bool {
	if len(s.choices) == 0 {
		return true
	}
	for _, c := range s.choices {
		if strings.EqualFold(v, c) {
			return true
		}
	}
	return false
}

// mustBe says what the choices are.
func (s *setting) mustBe() string {
	if len(s.choices) == 2 {
		return fmt.Sprintf("must be %s or %s", s.choices[0], s.choices[1])
	}
	return "must be one of " + strings.Join(s.choices, ", ")
}

// value formats the setting's value in cfg ("" for an empty string).
func (s *setting) value(cfg *serveConfig) string {
	switch p := s.field(cfg).(type) {
	case *string:
		return *p
	case *bool:
		return strconv.FormatBool(*p)
	case *time.Duration:
		return p.String()
	case *int:
		return strconv.Itoa(*p)
	case *oidclogin.Roles:
		if len(*p) == 0 {
			return ""
		}
		return fmt.Sprintf("%d values", len(*p))
	}
	panic(fmt.Sprintf("setting %s: unsupported type %T", s.flag, s.field(cfg)))
}
