package estate

import (
	"net/url"
	"sort"
	"strings"
)

// Telemetry names where a fleet's collectors and their updaters send their
// own telemetry, over OTLP/HTTP; a signal without a destination is not
// sent. myriarchd offers it to them as OpAMP connection settings.
type Telemetry struct {
	Metrics *Destination `yaml:"metrics"`
	Logs    *Destination `yaml:"logs"`
	Traces  *Destination `yaml:"traces"`
}

// Destination is an OTLP/HTTP endpoint and the headers sent with each
// request (e.g. an API key).
type Destination struct {
	Endpoint string            `yaml:"endpoint"`
	Headers  map[string]string `yaml:"headers"`
}

// Bounds of a telemetry destination.
const (
	maxTelemetryHeaders = 32
	maxHeaderValue      = 4096
)

// checkTelemetry reports every problem of a fleet's telemetry section.
func checkTelemetry(ps *problems, file string, line int, t *Telemetry) {
	if t.Metrics == nil && t.Logs == nil && t.Traces == nil {
		ps.add(file, line, "telemetry names no signal: give metrics, logs or traces a destination, or remove the section")
	}
	for _, s := range []struct {
		name string
		d    *Destination
	}{{"metrics", t.Metrics}, {"logs", t.Logs}, {"traces", t.Traces}} {
		if s.d != nil {
			checkDestination(ps, file, line, "telemetry."+s.name, s.d)
		}
	}
}

// unsafeYAML are characters the upstream Supervisor cannot take in an
// own-telemetry endpoint or header value: it writes them into the
// collector's configuration unquoted, so one of these breaks that YAML,
// and the Supervisor keeps the offer and then refuses to start.
const unsafeYAML = "\"'\\{}#`|>&*!%@,\t "

func checkDestination(ps *problems, file string, line int, field string, d *Destination) {
	checkHTTPURL(ps, file, line, field+".endpoint", d.Endpoint, "put credentials in headers")
	if i := strings.IndexAny(d.Endpoint, unsafeYAML); i >= 0 {
		ps.add(file, line, "%s.endpoint %q holds %q, which the collector's Supervisor cannot take", field, d.Endpoint, d.Endpoint[i])
	}
	if u, err := url.Parse(d.Endpoint); err == nil && hasDotSegment(u) {
		ps.add(file, line, "%s.endpoint %q has a . or .. path segment", field, d.Endpoint)
	}
	if len(d.Headers) > maxTelemetryHeaders {
		ps.add(file, line, "%s.headers has %d headers, more than %d", field, len(d.Headers), maxTelemetryHeaders)
	}
	names := make([]string, 0, len(d.Headers))
	for k := range d.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := d.Headers[k]
		switch {
		case !isToken(k):
			ps.add(file, line, "%s.headers: %q is not a header name", field, k)
		case strings.ContainsAny(v, "\r\n\x00"):
			ps.add(file, line, "%s.headers.%s holds a line break or NUL", field, k)
		case strings.ContainsAny(v, "\"'\\{}[]#`|>&*!%@,:") || strings.TrimSpace(v) != v:
			ps.add(file, line, "%s.headers.%s holds a character the collector's Supervisor cannot take (quotes, brackets, # : , and the like, or white space at an end)", field, k)
		case len(v) > maxHeaderValue:
			ps.add(file, line, "%s.headers.%s is %d bytes, more than %d", field, k, len(v), maxHeaderValue)
		}
	}
}

// hasDotSegment reports a path with a . or .. segment, also escaped.
func hasDotSegment(u *url.URL) bool {
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		s, err := url.PathUnescape(seg)
		if err != nil || s == "." || s == ".." {
			return true
		}
	}
	return false
}

// isToken reports an HTTP header name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// checkHTTPURL reports a url field that is not an absolute http(s) URL
// with a host, carries user information (userinfo says where credentials
// go instead) or a fragment.
func checkHTTPURL(ps *problems, file string, line int, field, raw, userinfo string) {
	if raw == "" {
		ps.add(file, line, "%s is required", field)
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		ps.add(file, line, "%s %q is not a URL: %v", field, raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		ps.add(file, line, "%s %q: the scheme must be http or https", field, raw)
	case u.Host == "" || u.Hostname() == "":
		ps.add(file, line, "%s %q has no host", field, raw)
	case u.User != nil:
		ps.add(file, line, "%s %q carries user information; %s", field, raw, userinfo)
	case u.Fragment != "":
		ps.add(file, line, "%s %q has a fragment, which is never sent", field, raw)
	}
}
