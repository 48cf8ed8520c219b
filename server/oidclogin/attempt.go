package oidclogin

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// AttemptTTL is how long a sign-in may take at the provider.
const AttemptTTL = 10 * time.Minute

// Attempt is one sign-in under way: its state and nonce, the PKCE
// verifier and the console page to go to afterwards. It is kept in a
// cookie of the browser that began it, and checked against the provider's
// answer there.
type Attempt struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"next"`
}

// Begin starts a sign-in that goes on to next: the attempt, and the
// provider's authorization URL to send the browser to (code flow, PKCE
// with S256). It fails while the provider is unavailable.
func (p *RP) Begin(next string) (Attempt, string, error) {
	prov, err := p.discovered()
	if err != nil {
		return Attempt{}, "", err
	}
	a := Attempt{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Next: next}
	return a, p.config(prov).AuthCodeURL(a.State, oidc.Nonce(a.Nonce), oauth2.S256ChallengeOption(a.Verifier)), nil
}

// Encode is a as a cookie's value.
func (a Attempt) Encode() string {
	b, _ := json.Marshal(a)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseAttempt reads a cookie's value; anything else is no attempt.
func ParseAttempt(v string) Attempt {
	var a Attempt
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || json.Unmarshal(b, &a) != nil {
		return Attempt{}
	}
	return a
}
