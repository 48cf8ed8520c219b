package download

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestRedirectsAcrossOrigins: an offer's headers go to the offer's URL
// only, never across a redirect to another origin; with AllowedHosts, a
// URL or a redirect to another host fails before any request reaches it.
func TestRedirectsAcrossOrigins(t *testing.T) {
	body := payload(t, 4096)
	var mu sync.Mutex
	var seen []http.Header
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Write(body)
	}))
	defer mirror.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Artifact-Key") != "secret" {
			http.Error(w, "no key", http.StatusForbidden)
			return
		}
		http.Redirect(w, r, mirror.URL+"/a.tar.gz", http.StatusFound)
	}))
	defer origin.Close()
	withHeaders := func(r *Request) {
		r.Header = http.Header{"X-Artifact-Key": {"secret"}, "Authorization": {"Bearer offer"}, "Cookie": {"c=1"}}
	}
	host := func(s string) string { u, _ := url.Parse(s); return u.Host }

	t.Run("headers stay with their origin", func(t *testing.T) {
		seen = nil
		if _, _, err := fetch(t, fastOpts(), origin.URL+"/a.tar.gz", withHeaders); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 1 {
			t.Fatalf("mirror saw %d requests", len(seen))
		}
		for _, k := range []string{"X-Artifact-Key", "Authorization", "Cookie"} {
			if v := seen[0].Get(k); v != "" {
				t.Errorf("the offer's %s header (%q) was sent across the redirect to another origin", k, v)
			}
		}
	})
	t.Run("redirect to a host not allowed", func(t *testing.T) {
		seen = nil
		o := fastOpts()
		o.AllowedHosts = []HostPattern{HostPattern(host(origin.URL))}
		_, _, err := fetch(t, o, origin.URL+"/a.tar.gz", withHeaders)
		if !errors.Is(err, ErrHostNotAllowed) || !isPermanent(err) {
			t.Fatalf("redirect to %s: %v, want a permanent ErrHostNotAllowed", host(mirror.URL), err)
		}
		if len(seen) != 0 {
			t.Errorf("the mirror was asked %d times", len(seen))
		}
	})
	t.Run("URL on a host not allowed", func(t *testing.T) {
		o := fastOpts()
		o.AllowedHosts = []HostPattern{"downloads.example.com"}
		if _, _, err := fetch(t, o, mirror.URL+"/a.tar.gz", nil); !errors.Is(err, ErrHostNotAllowed) || !strings.Contains(err.Error(), host(mirror.URL)) {
			t.Fatalf("%v, want ErrHostNotAllowed naming %s", err, host(mirror.URL))
		}
	})
	t.Run("both allowed", func(t *testing.T) {
		o := fastOpts()
		o.AllowedHosts = []HostPattern{"127.0.0.1"} // any port
		if _, _, err := fetch(t, o, origin.URL+"/a.tar.gz", withHeaders); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHostPatterns(t *testing.T) {
	u := func(s string) *url.URL { p, _ := url.Parse(s); return p }
	for _, tt := range []struct {
		pattern, url string
		match        bool
	}{
		{"opamp.example.com", "https://opamp.example.com:4320/artifacts/x", true},
		{"opamp.example.com", "https://OPAMP.example.com/x", true},
		{"opamp.example.com:4320", "https://opamp.example.com:4320/x", true},
		{"opamp.example.com:4320", "https://opamp.example.com/x", false},
		{"mirror.example.com:443", "https://mirror.example.com/x", true},
		{"*.example.com", "https://cdn.eu.example.com/x", true},
		{"*.example.com", "https://example.com/x", false},
		{"*.example.com", "https://evilexample.com/x", false},
		{"example.com", "https://example.com.evil.net/x", false},
		{"[::1]:4320", "http://[::1]:4320/x", true},
		{"::1", "http://[::1]:1/x", true},
	} {
		p, err := ParseHostPattern(tt.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		if got := p.matches(u(tt.url)); got != tt.match {
			t.Errorf("%q matching %s: %v, want %v", tt.pattern, tt.url, got, tt.match)
		}
	}
	for _, bad := range []string{"", "https://example.com", "example.com/path", "ex*mple.com", "*", "user@host", "host:"} {
		if _, err := ParseHostPattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
