package updater

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/myriarch/myriarch/agent/config"
)

// ServerTransport returns the HTTP transport for fetching packages: it uses
// the server.tls settings, and it presents the updater's credential (the
// bearer token) to the OpAMP server's own origin, which serves artifacts
// only to agents that authenticate. The origin is server.endpoint's host
// with ws→http and wss→https. Requests to any other origin (a CDN named in a
// download URL, or the target of a redirect) never carry the token, and a
// request that already has an Authorization header (from the offer's
// DownloadableFile headers) keeps it.
func ServerTransport(cfg *config.Config, connectTimeout, headerTimeout time.Duration) (http.RoundTripper, error) {
	ep, err := url.Parse(cfg.Server.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("server.endpoint: %w", err)
	}
	scheme := map[string]string{"ws": "http", "wss": "https", "http": "http", "https": "https"}[ep.Scheme]
	if scheme == "" {
		return nil, fmt.Errorf("server.endpoint: unsupported scheme %q", ep.Scheme)
	}
	tc, err := tlsConfig(cfg.Server, "https")
	if err != nil {
		return nil, err
	}
	base := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tc,
		TLSHandshakeTimeout:   connectTimeout,
		ResponseHeaderTimeout: headerTimeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		IdleConnTimeout:       30 * time.Second,
		DisableCompression:    true, // byte counts and Range offsets must be of the file itself
	}
	return &bearerTransport{base: base, scheme: scheme, host: canonicalHost(scheme, ep.Host), server: &cfg.Server}, nil
}

type bearerTransport struct {
	base   http.RoundTripper
	scheme string
	host   string
	server *config.ServerConfig
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != t.scheme || canonicalHost(r.URL.Scheme, r.URL.Host) != t.host || r.Header.Get("Authorization") != "" {
		return t.base.RoundTrip(r)
	}
	tok, err := t.server.BearerToken()
	if err != nil {
		return nil, err
	}
	if tok == "" {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not modify the caller's request
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

// canonicalHost lower-cases host and adds the scheme's default port.
func canonicalHost(scheme, host string) string {
	host = strings.ToLower(host)
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if scheme == "https" {
		return net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}
