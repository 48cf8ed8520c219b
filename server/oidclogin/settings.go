package oidclogin

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Defaults of the settings left empty.
const (
	DefaultRoleClaim = "groups"
	DefaultName      = "your provider"
	// CallbackPath is where the provider sends the browser back to.
	CallbackPath = "/login/oidc/callback"
)

// Settings are myriarchd serve's settings of sign-in with an OpenID
// Connect provider; without an Issuer there is none.
type Settings struct {
	// Issuer is the provider's issuer URL, where its discovery document is
	// found (https; http only for a provider on this host).
	Issuer string
	// ClientID is myriarchd's client at the provider, and the audience of
	// the ID tokens it accepts.
	ClientID string
	// ClientSecretFile holds the client's secret, which no flag carries.
	ClientSecretFile string
	// RoleClaim names the ID token's claim whose values Roles maps (a
	// string or a list of strings; default groups).
	RoleClaim string
	// Name is the provider's name on the login page (default "your
	// provider").
	Name string
	// RedirectURL is where the provider sends the browser back to:
	// http://<admin listen address>/login/oidc/callback unless given, as it
	// must be when the console is reached through a proxy.
	RedirectURL string
	// Roles maps values of the role claim to roles (config file only).
	Roles Roles
}

// Enabled reports whether sign-in with a provider is configured.
func (s *Settings) Enabled() bool { return s.Issuer != "" }

// Validate reports every problem of the settings, each named by its flag
// or config file key; adminListen is the console's listen address, which
// the default redirect URL is made of.
func (s *Settings) Validate(adminListen string) error {
	if !s.Enabled() {
		var set []string
		for _, f := range []struct{ name, v string }{
			{"--oidc-client-id", s.ClientID}, {"--oidc-client-secret-file", s.ClientSecretFile}, {"--oidc-redirect-url", s.RedirectURL},
		} {
			if f.v != "" {
				set = append(set, f.name)
			}
		}
		if len(s.Roles) > 0 {
			set = append(set, "oidc_roles")
		}
		if len(set) > 0 {
			return fmt.Errorf("%s given without --oidc-issuer: sign-in with a provider needs its issuer", strings.Join(set, ", "))
		}
		return nil
	}
	var errs []error
	if err := checkIssuer(s.Issuer); err != nil {
		errs = append(errs, fmt.Errorf("--oidc-issuer %q: %w", s.Issuer, err))
	}
	if s.ClientID == "" {
		errs = append(errs, errors.New("--oidc-client-id is required with --oidc-issuer"))
	}
	if s.ClientSecretFile == "" {
		errs = append(errs, errors.New("--oidc-client-secret-file is required with --oidc-issuer"))
	}
	if s.RedirectURL != "" {
		if err := checkRedirect(s.RedirectURL); err != nil {
			errs = append(errs, fmt.Errorf("--oidc-redirect-url %q: %w", s.RedirectURL, err))
		}
	} else if host, _, err := net.SplitHostPort(adminListen); err == nil && unspecified(host) {
		errs = append(errs, fmt.Errorf("--oidc-redirect-url is required: --admin-listen %s names no host the browser could come back to", adminListen))
	}
	if strings.TrimSpace(s.RoleClaim) != s.RoleClaim {
		errs = append(errs, fmt.Errorf("--oidc-role-claim %q: white space around the claim's name", s.RoleClaim))
	}
	if err := s.Roles.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// WithDefaults returns s with its empty settings at their defaults.
func (s Settings) WithDefaults() Settings {
	if s.RoleClaim == "" {
		s.RoleClaim = DefaultRoleClaim
	}
	if s.Name == "" {
		s.Name = DefaultName
	}
	return s
}

// checkIssuer accepts an https URL, or an http one of a provider on this
// host (tests, a local provider): the discovery document, keys and tokens
// come from there.
func checkIssuer(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %w", err)
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return errors.New("must be an absolute URL with a host, and without user, query or fragment")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return errors.New("must be https (http only for a provider on this host: localhost, 127.0.0.0/8, ::1)")
	}
	return fmt.Errorf("must be https, not %s", u.Scheme)
}

func checkRedirect(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %w", err)
	case (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return errors.New("must be an absolute http or https URL")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("must have no query or fragment")
	case !strings.HasSuffix(u.Path, CallbackPath):
		return fmt.Errorf("must end in %s, where the console takes the provider's answer", CallbackPath)
	}
	return nil
}

// loopback reports whether host is this host only: localhost,
// 127.0.0.0/8 or ::1.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// unspecified reports whether a listen address's host is every interface.
func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// DefaultRedirectURL is the redirect URL for a console listening on addr.
func DefaultRedirectURL(addr string) string { return "http://" + addr + CallbackPath }
