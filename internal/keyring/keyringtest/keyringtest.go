// Package keyringtest makes keys and signed keyrings for tests.
package keyringtest

import (
	"encoding/json"
	"fmt"
	"testing"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/internal/keyring"
)

// Key is a minisign key pair with its public key's text.
type Key struct {
	Public  minisign.PublicKey
	Private minisign.PrivateKey
	Text    string // the public key's line ("RW…"), without its comment
}

// NewKey makes a key pair.
func NewKey(t testing.TB) Key {
	t.Helper()
	pub, priv, err := minisign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return Key{Public: pub, Private: priv, Text: pub.String()}
}

// ID is the key's ID as a keyring names it.
func (k Key) ID() string { return fmt.Sprintf("%016X", k.Public.ID()) }

// Doc is a keyring document to sign: its fields as JSON takes them.
type Doc struct {
	Serial  uint64       `json:"serial"`
	Keys    []DocKey     `json:"keys"`
	Revoked []DocRevoked `json:"revoked"`
}

// DocKey is a key of a Doc.
type DocKey struct {
	Key       string `json:"key"`
	NotBefore string `json:"not_before,omitempty"`
	NotAfter  string `json:"not_after,omitempty"`
}

// DocRevoked is a revoked key of a Doc.
type DocRevoked struct {
	KeyID  string `json:"key_id"`
	Reason string `json:"reason,omitempty"`
}

// JSON is the document's text.
func (d Doc) JSON(t testing.TB) []byte {
	t.Helper()
	if d.Keys == nil {
		d.Keys = []DocKey{}
	}
	if d.Revoked == nil {
		d.Revoked = []DocRevoked{}
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// Sign signs data with root, as `minisign -S` does (pre-hashed).
func Sign(root Key, data []byte) keyring.Signed {
	return keyring.Signed{Keyring: data, Signature: string(minisign.SignWithComments(root.Private, data, "keyring", "keyring"))}
}
