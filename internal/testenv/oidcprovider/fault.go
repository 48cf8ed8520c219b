package oidcprovider

import (
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// faulty serves the token endpoint with h; while a fault is set, the ID
// token of a successful answer is given it.
func (p *Provider) faulty(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		f := p.fault
		p.mu.Unlock()
		if f == NoFault {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code == http.StatusOK {
			var err error
			if body, err = p.spoil(body, f); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// spoil gives the ID token of a token response the fault f.
func (p *Provider) spoil(body []byte, f Fault) ([]byte, error) {
	var resp map[string]any
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("token response: %w", err)
	}
	raw, _ := resp["id_token"].(string)
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, fmt.Errorf("ID token: %w", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
		return nil, fmt.Errorf("ID token claims: %w", err)
	}
	key := p.keys.published
	switch f {
	case WrongAudience:
		claims["aud"], claims["azp"] = []string{"another-client"}, "another-client"
	case Expired:
		claims["iat"], claims["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
	case OtherKey:
		key = p.keys.other
	case WrongNonce:
		claims["nonce"] = "another-nonce"
	}
	if resp["id_token"], err = sign(claims, key); err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// sign makes a JWT of claims signed by key under the provider's key id.
func sign(claims map[string]any, key *ecdsa.PrivateKey) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
