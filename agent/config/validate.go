package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/internal/yamlstrict"
)

// Validate reports every problem in c at once (errors.Join of *FieldError),
// each naming the YAML path of the offending key.
func (c *Config) Validate() error {
	var errs []error
	add := func(path, format string, args ...any) { errs = append(errs, fieldErr(path, format, args...)) }

	c.Server.validate(add)

	requireAbs(add, "supervisor.storage_dir", c.Supervisor.StorageDir)
	c.validateMode(add)

	if strings.TrimSpace(c.Collector.Package) == "" {
		add("collector.package", "required")
	}
	requireAbs(add, "collector.root", c.Collector.Root)
	switch {
	case strings.TrimSpace(c.Collector.Executable) == "":
		add("collector.executable", "required")
	case strings.ContainsAny(c.Collector.Executable, `/\`):
		add("collector.executable", "must be a file name inside the version directory, not a path: %q", c.Collector.Executable)
	}
	if c.Collector.HealthWindow <= 0 {
		add("collector.health_window", "must be positive, got %s", c.Collector.HealthWindow)
	}
	if c.Collector.MaxPackageSize <= 0 {
		add("collector.max_package_size", "must be positive, got %d", c.Collector.MaxPackageSize)
	}

	for i, h := range c.Trust.DownloadHosts {
		if _, err := download.ParseHostPattern(h); err != nil {
			add(fmt.Sprintf("trust.download_hosts[%d]", i), "%v", err)
		}
	}
	for i, h := range c.Trust.TelemetryHosts {
		if _, err := download.ParseHostPattern(h); err != nil {
			add(fmt.Sprintf("trust.telemetry_hosts[%d]", i), "%v", err)
		}
	}
	for i, k := range c.Trust.MinisignPublicKeys {
		var pk minisign.PublicKey
		if err := pk.UnmarshalText([]byte(strings.TrimSpace(k))); err != nil {
			add(fmt.Sprintf("trust.minisign_public_keys[%d]", i), "not a minisign public key: %v", err)
		}
	}
	for i, k := range c.Trust.MinisignKeys {
		var pk minisign.PublicKey
		if err := pk.UnmarshalText([]byte(strings.TrimSpace(k.Key))); err != nil {
			add(fmt.Sprintf("trust.minisign_keys[%d].key", i), "not a minisign public key: %v", err)
		}
		if !k.NotBefore.IsZero() && !k.NotAfter.IsZero() && !k.NotAfter.After(k.NotBefore) {
			add(fmt.Sprintf("trust.minisign_keys[%d].not_after", i), "must be after not_before (%s), got %s",
				k.NotBefore.UTC().Format(time.RFC3339), k.NotAfter.UTC().Format(time.RFC3339))
		}
	}

	for i, k := range c.Trust.RootKeys {
		var pk minisign.PublicKey
		if err := pk.UnmarshalText([]byte(strings.TrimSpace(k))); err != nil {
			add(fmt.Sprintf("trust.root_keys[%d]", i), "not a minisign public key: %v", err)
		}
	}
	c.Trust.validateSigstore(add)

	requireAbs(add, "state_dir", c.StateDir)
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		add("log.level", "must be one of debug, info, warn, error, got %q", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		add("log.format", "must be text or json, got %q", c.Log.Format)
	}

	if err := c.Providers.Validate(); err != nil {
		for _, e := range yamlstrict.Flatten(err) {
			var fe *FieldError
			if errors.As(e, &fe) || strings.HasPrefix(e.Error(), "providers") {
				errs = append(errs, e)
				continue
			}
			errs = append(errs, &FieldError{Path: "providers", Err: e})
		}
	}
	return errors.Join(errs...)
}

func (s *ServerConfig) validate(add adder) {
	u, err := url.Parse(s.Endpoint)
	switch {
	case strings.TrimSpace(s.Endpoint) == "":
		add("server.endpoint", "required: the OpAMP server URL, e.g. wss://myriarch.example.com:4320/v1/opamp")
	case err != nil:
		add("server.endpoint", "invalid URL: %v", err)
	case !slices.Contains([]string{"ws", "wss", "http", "https"}, u.Scheme):
		add("server.endpoint", "scheme must be ws, wss, http or https, got %q", u.Scheme)
	case u.Host == "":
		add("server.endpoint", "missing host in %q", s.Endpoint)
	}
	switch {
	case s.Token != "" && s.TokenFile != "":
		add("server.token", "set only one of server.token and server.token_file")
	case s.Token == "" && s.TokenFile == "" && s.TLS.CertFile == "":
		add("server.token", "required: set server.token or server.token_file (or a client certificate in server.tls.cert_file)")
	case s.TokenFile != "":
		if _, err := ReadToken(s.TokenFile); err != nil {
			add("server.token_file", "%v", err)
		} else if why := tokenFileWritable(s.TokenFile); why != "" {
			add("server.token_file", "%s", why)
		}
	case strings.ContainsAny(s.Token, "\r\n"):
		add("server.token", "must be a single line")
	}
	if (s.TLS.CertFile == "") != (s.TLS.KeyFile == "") {
		add("server.tls", "cert_file and key_file must be set together")
	}
	for _, f := range []struct{ path, file string }{
		{"server.tls.ca_file", s.TLS.CAFile}, {"server.tls.cert_file", s.TLS.CertFile}, {"server.tls.key_file", s.TLS.KeyFile},
	} {
		if f.file == "" {
			continue
		}
		if _, err := os.Stat(f.file); err != nil {
			add(f.path, "cannot read: %v", err)
		}
	}
}

// ReadToken reads a token file: one line, surrounding whitespace ignored.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	if strings.ContainsAny(t, "\r\n") {
		return "", fmt.Errorf("token file %s must hold a single line", path)
	}
	return t, nil
}

// BearerToken returns the token to send, reading token_file when set.
func (s *ServerConfig) BearerToken() (string, error) {
	if s.TokenFile != "" {
		return ReadToken(s.TokenFile)
	}
	return s.Token, nil
}

func requireAbs(add adder, path, v string) {
	switch {
	case strings.TrimSpace(v) == "":
		add(path, "required")
	case !filepath.IsAbs(v):
		add(path, "must be an absolute path, got %q", v)
	}
}

// validateSigstore checks trust.sigstore: who may sign, and a trusted root
// that parses.
func (t TrustConfig) validateSigstore(add adder) {
	s := t.Sigstore
	if s == nil {
		return
	}
	if s.Identity == "" && s.IdentityRegexp == "" {
		add("trust.sigstore.identity", "required (or identity_regexp): the certificate identity that may sign, such as a release workflow's URL on a tag")
	}
	if s.Issuer == "" && s.IssuerRegexp == "" {
		add("trust.sigstore.issuer", "required (or issuer_regexp): the OIDC issuer of that identity, such as https://token.actions.githubusercontent.com")
	}
	for _, r := range []struct{ path, expr string }{{"trust.sigstore.identity_regexp", s.IdentityRegexp}, {"trust.sigstore.issuer_regexp", s.IssuerRegexp}} {
		if _, err := regexp.Compile(r.expr); err != nil {
			add(r.path, "not a regular expression: %v", err)
		}
	}
	if s.TrustedRootFile != "" {
		data, err := os.ReadFile(s.TrustedRootFile)
		if err != nil {
			add("trust.sigstore.trusted_root_file", "%v", err)
		} else if _, err := verify.RootExpiry(data); err != nil {
			add("trust.sigstore.trusted_root_file", "%v", err)
		}
	}
}
