package oidclogin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Options configure a relying party.
type Options struct {
	Settings Settings
	// Secret is the client's secret (see ReadSecret).
	Secret string
	// RedirectURL returns where the provider sends the browser back to.
	RedirectURL func() string
	Log         *slog.Logger
	// MinBackoff and MaxBackoff bound the wait between two attempts at the
	// provider's discovery document (default 1s, doubling up to 1 min).
	MinBackoff, MaxBackoff time.Duration
}

// requestTimeout bounds each request to the provider.
const requestTimeout = 10 * time.Second

// RP is myriarchd as the relying party of one OpenID Connect provider.
// Its methods are safe for concurrent use.
type RP struct {
	o    Options
	s    Settings
	log  *slog.Logger
	http *http.Client

	mu       sync.Mutex
	provider *oidc.Provider // nil until discovered; guarded by mu
	problem  error          // why it is not, yet; guarded by mu

	stop    context.CancelFunc
	stopped chan struct{}
}

// New returns the relying party of o's provider; Start discovers it.
func New(o Options) *RP {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(time.Minute, o.MinBackoff)
	}
	s := o.Settings.WithDefaults()
	return &RP{o: o, s: s, log: o.Log, http: &http.Client{Timeout: requestTimeout},
		problem: errors.New("its discovery document has not been read yet"), stopped: make(chan struct{})}
}

// Name is the provider's name, as the login page shows it.
func (p *RP) Name() string { return p.s.Name }

// Start reads the provider's discovery document in the background, again
// and again with backoff while the provider cannot be reached; it does
// not wait for it. Close stops it.
func (p *RP) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go p.discover(ctx)
}

// Close stops the discovery, if it is still trying.
func (p *RP) Close() {
	if p.stop == nil {
		return
	}
	p.stop()
	<-p.stopped
}

func (p *RP) discover(ctx context.Context) {
	defer close(p.stopped)
	wait := p.o.MinBackoff
	for {
		prov, err := oidc.NewProvider(oidc.ClientContext(ctx, p.http), p.s.Issuer)
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		p.provider, p.problem = prov, err
		p.mu.Unlock()
		if err == nil {
			p.log.Info("OpenID Connect provider discovered", "issuer", p.s.Issuer, "name", p.s.Name)
			return
		}
		p.log.Warn("OpenID Connect provider unavailable; sign-in with it waits", "issuer", p.s.Issuer, "retry_in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, p.o.MaxBackoff)
	}
}

// Available reports whether sign-in with the provider can begin: nil once
// its discovery document was read, else why not.
func (p *RP) Available() error {
	_, err := p.discovered()
	return err
}

func (p *RP) discovered() (*oidc.Provider, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.provider == nil {
		return nil, fmt.Errorf("%s is unavailable (%v); myriarchd keeps trying", p.s.Name, p.problem)
	}
	return p.provider, nil
}

// config is the OAuth 2 client of prov.
func (p *RP) config(prov *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: p.s.ClientID, ClientSecret: p.o.Secret, Endpoint: prov.Endpoint(),
		RedirectURL: p.o.RedirectURL(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

// RedirectURL is where the provider sends the browser back to.
func (p *RP) RedirectURL() string { return p.o.RedirectURL() }
