package oidclogin_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv/oidcprovider"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/oidclogin"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A provider that cannot be reached at the start is tried again, with
// backoff, until it answers; meanwhile sign-in says it is unavailable.
func TestDiscoveryIsRetried(t *testing.T) {
	p := oidcprovider.Start(t)
	p.SetDown(true)
	var logs syncBuffer
	rp := oidclogin.New(oidclogin.Options{Secret: "s", RedirectURL: func() string { return redirect },
		Log:        slog.New(slog.NewTextHandler(&logs, nil)),
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Settings: oidclogin.Settings{Issuer: p.Issuer(), ClientID: "myriarch", Roles: roles}})
	rp.Start()
	t.Cleanup(rp.Close)
	testkit.WaitFor(t, "two failed attempts", func() bool { return strings.Count(logs.String(), "OpenID Connect provider unavailable") >= 2 })
	err := rp.Available()
	if err == nil || !strings.Contains(err.Error(), "your provider is unavailable") || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Available while the provider is down: %v", err)
	}
	if _, _, err := rp.Begin("/"); err == nil {
		t.Fatal("a sign-in began while the provider is down")
	}
	p.SetDown(false)
	testkit.WaitFor(t, "the provider discovered", func() bool { return rp.Available() == nil })
	if !strings.Contains(logs.String(), "OpenID Connect provider discovered") {
		t.Errorf("the discovery is not logged:\n%s", logs.String())
	}
	if _, authURL, err := rp.Begin("/"); err != nil || !strings.HasPrefix(authURL, p.Issuer()+"/authorize?") {
		t.Fatalf("Begin after the discovery: %q %v", authURL, err)
	}
}

// The authorization URL asks for the code flow with PKCE (S256), a state
// and a nonce, each new per attempt.
func TestBeginAsksForPKCE(t *testing.T) {
	_, rp := newRP(t)
	a, authURL, err := rp.Begin("/")
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := rp.Begin("/")
	for _, want := range []string{"response_type=code", "code_challenge_method=S256", "code_challenge=", "state=" + a.State, "nonce=" + a.Nonce,
		"client_id=myriarch", "scope=openid+email+profile"} {
		if !strings.Contains(authURL, want) {
			t.Errorf("authorization URL lacks %s: %s", want, authURL)
		}
	}
	if strings.Contains(authURL, a.Verifier) {
		t.Errorf("the PKCE verifier is in the authorization URL: %s", authURL)
	}
	if a.State == b.State || a.Nonce == b.Nonce || a.Verifier == b.Verifier || len(a.State) < 20 || len(a.Nonce) < 20 {
		t.Errorf("attempts share or have short secrets: %+v %+v", a, b)
	}
}
