// Package oidcprovider is an OpenID Provider for tests, built on
// zitadel/oidc's op package: its own signing key, discovery, JWKS, an
// authorization endpoint with a one-button login step that signs in the
// user set with SetUser, and a token endpoint that requires PKCE (S256)
// and the client's secret. SetFault makes it issue ID tokens a relying
// party must refuse; SetDown makes it unreachable. Only tests import it.
package oidcprovider

import (
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is who the login step signs in.
type User struct {
	Subject       string
	Email         string
	EmailVerified bool
	Username      string // preferred_username
	// Claims are further claims of the ID token, such as groups.
	Claims map[string]any
}

// Fault is a flaw of the ID tokens issued: the token endpoint's answer
// carries the token op made, changed and signed again.
type Fault int

// The faults, each of which a relying party must refuse.
const (
	NoFault       Fault = iota
	WrongAudience       // issued to another client
	Expired             // expired an hour ago
	OtherKey            // signed with a key the provider does not publish, under its key's id
	WrongNonce          // carries another nonce than the request's
)

// Client is a relying party the provider knows.
type Client struct {
	ID, Secret  string
	RedirectURI string
}

// Provider is a running OpenID Provider. Its methods are safe for
// concurrent use.
type Provider struct {
	issuer string
	keys   keys

	mu       sync.Mutex
	user     User              // guarded by mu
	fault    Fault             // guarded by mu
	down     bool              // guarded by mu
	clients  map[string]Client // guarded by mu
	requests map[string]*request
	codes    map[string]string // code: request id
}

// Start runs a provider on loopback until the test ends. Its issuer is
// http://localhost:PORT: another site than 127.0.0.1 for a browser, as a
// real provider is.
func Start(t testing.TB) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{issuer: "http://localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), keys: newKeys(t),
		clients: map[string]Client{}, requests: map[string]*request{}, codes: map[string]string{}}
	cfg := &op.Config{CodeMethodS256: true, AuthMethodPost: true}
	if _, err := rand.Read(cfg.CryptoKey[:]); err != nil {
		t.Fatal(err)
	}
	o, err := op.NewProvider(cfg, &storage{p}, op.StaticIssuer(p.issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", p.loginPage)
	mux.HandleFunc("POST /login", p.login)
	mux.Handle("/oauth/token", p.faulty(o))
	mux.Handle("/", o)
	srv := &http.Server{Handler: p.unlessDown(mux), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("OpenID provider: %v", err)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return p
}

// Issuer is the provider's issuer URL.
func (p *Provider) Issuer() string { return p.issuer }

// Register adds (or replaces) a client.
func (p *Provider) Register(c Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clients[c.ID] = c
}

// SetUser sets who the login step signs in from now on.
func (p *Provider) SetUser(u User) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.user = u
}

// SetFault makes every ID token issued from now on have f (NoFault: none).
func (p *Provider) SetFault(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// SetDown makes every request to the provider answer 503 while down.
func (p *Provider) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

func (p *Provider) unlessDown(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			http.Error(w, "the provider is down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}
