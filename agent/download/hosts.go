package download

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrHostNotAllowed: a download URL, or a redirect, leads to a host that
// Options.AllowedHosts does not list.
var ErrHostNotAllowed = errors.New("download host not allowed")

// HostPattern is one entry of Options.AllowedHosts: "host" (any port),
// "host:port", "[v6addr]:port", or "*.example.com" (any subdomain of
// example.com, any port). Host names compare case-insensitively.
type HostPattern string

// ParseHostPattern checks one entry.
func ParseHostPattern(s string) (HostPattern, error) {
	p := strings.ToLower(strings.TrimSpace(s))
	switch {
	case p == "":
		return "", errors.New("empty host")
	case strings.Contains(p, "://") || strings.ContainsAny(p, "/?#@ "):
		return "", fmt.Errorf("%q: a host or host:port, not a URL", s)
	}
	host := p
	if h, port, err := net.SplitHostPort(p); err == nil {
		if port == "" {
			return "", fmt.Errorf("%q: empty port", s)
		}
		host = h
	} else if strings.Count(p, ":") > 1 && !strings.HasPrefix(p, "[") {
		host = p // a bare IPv6 address
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		host = rest
	}
	if host == "" || strings.Contains(host, "*") {
		return "", fmt.Errorf("%q: a wildcard may only be a leading *.", s)
	}
	return HostPattern(p), nil
}

// matches reports whether u's host (and port) is allowed by p.
func (p HostPattern) matches(u *url.URL) bool {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	pat := string(p)
	wantPort := ""
	if h, pp, err := net.SplitHostPort(pat); err == nil {
		pat, wantPort = h, pp
	}
	if wantPort != "" && wantPort != port {
		return false
	}
	if rest, ok := strings.CutPrefix(pat, "*."); ok {
		return strings.HasSuffix(host, "."+rest)
	}
	return strings.Trim(pat, "[]") == host
}

// allowHost checks u against the allowed hosts (none: any host).
func allowHost(allowed []HostPattern, u *url.URL) error {
	return AllowHost(allowed, u, "trust.download_hosts")
}

// AllowHost checks u against the allowed hosts (none: any host); setting
// names the list in the error.
func AllowHost(allowed []HostPattern, u *url.URL, setting string) error {
	if len(allowed) == 0 {
		return nil
	}
	for _, p := range allowed {
		if p.matches(u) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not in %s", ErrHostNotAllowed, u.Host, setting)
}

// sameOrigin reports whether a and b share scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// keptAcrossOrigins are the request headers a redirect to another origin
// keeps: the fetcher's own. The offer's headers (credentials for the
// artifact's server, typically) are for the offer's URL only.
var keptAcrossOrigins = map[string]bool{"Range": true, "If-Range": true, "User-Agent": true}

// checkRedirect bounds the redirect chain, refuses hosts not allowed, and
// strips the offer's headers from a request to another origin than the
// first.
func checkRedirect(o Options) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= o.MaxRedirects {
			return fmt.Errorf("%w (%d, last %s)", ErrTooManyRedirects, len(via), req.URL.Redacted())
		}
		if err := allowHost(o.AllowedHosts, req.URL); err != nil {
			return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
		}
		if !sameOrigin(req.URL, via[0].URL) {
			for k := range req.Header {
				if !keptAcrossOrigins[http.CanonicalHeaderKey(k)] {
					req.Header.Del(k)
				}
			}
		}
		return nil
	}
}
