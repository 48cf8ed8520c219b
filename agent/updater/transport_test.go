package updater

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestServerTransportSendsTokenOnlyToServerOrigin(t *testing.T) {
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, "other:"+r.Header.Get("Authorization"))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path+":"+r.Header.Get("Authorization"))
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, other.URL+"/file", http.StatusFound)
		}
	}))
	defer srv.Close()

	cfg := testConfig(t, "ws://"+strings.TrimPrefix(srv.URL, "http://")+"/v1/opamp")
	tr, err := ServerTransport(cfg, 5*time.Second, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	get := func(url string, hdr string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if hdr != "" {
			req.Header.Set("Authorization", hdr)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if req.Header.Get("Authorization") != hdr {
			t.Error("transport modified the caller's request")
		}
	}
	get(srv.URL+"/artifacts/a.tar.gz", "")
	get(other.URL+"/file", "")
	get(srv.URL+"/artifacts/b.tar.gz", "Bearer from-offer")
	get(srv.URL+"/redirect", "")
	want := []string{
		"/artifacts/a.tar.gz:Bearer s3cret-token",
		"other:",
		"/artifacts/b.tar.gz:Bearer from-offer",
		"/redirect:Bearer s3cret-token",
		"other:", // the redirect target never sees the token
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

func TestCanonicalHost(t *testing.T) {
	for _, tt := range [][3]string{
		{"http", "Example.com", "example.com:80"},
		{"https", "example.com", "example.com:443"},
		{"https", "example.com:8443", "example.com:8443"},
		{"http", "[::1]", "[::1]:80"},
	} {
		if got := canonicalHost(tt[0], tt[1]); got != tt[2] {
			t.Errorf("canonicalHost(%q, %q) = %q, want %q", tt[0], tt[1], got, tt[2])
		}
	}
}
