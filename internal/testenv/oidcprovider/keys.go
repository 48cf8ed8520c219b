package oidcprovider

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// keyID names the published key; the other key signs under the same id.
const keyID = "test-key"

// keys are the provider's signing key, which it publishes, and another
// one, which it does not.
type keys struct {
	published, other *ecdsa.PrivateKey
}

func newKeys(t testing.TB) keys {
	t.Helper()
	var k keys
	for _, p := range []**ecdsa.PrivateKey{&k.published, &k.other} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		*p = key
	}
	return k
}

// signingKey is a private key as op signs with it.
type signingKey struct{ key *ecdsa.PrivateKey }

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return keyID }

// publicKey is the published key as op serves it in the JWKS.
type publicKey struct{ key *ecdsa.PublicKey }

func (k publicKey) ID() string                         { return keyID }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.ES256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return k.key }
