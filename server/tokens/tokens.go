// Package tokens implements enrollment tokens: how secrets are minted, stored
// (hashed, never in plain text), recognised, and which labels a token may carry.
package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// prefix marks a string as a myriarch enrollment token, so a leaked one is
// easy to recognise in logs and secret scanners.
const prefix = "myr_"

// Token is an enrollment token as the server keeps it: the secret only as a hash.
type Token struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	Hash      []byte            `json:"-"`
	CreatedAt time.Time         `json:"createdAt"`
	RevokedAt *time.Time        `json:"revokedAt,omitempty"`
}

// Revoked reports whether the token may no longer be used.
func (t *Token) Revoked() bool { return t.RevokedAt != nil }

// New mints a token. The returned secret is the only copy of it: show it once.
func New(name string, labels map[string]string, now time.Time) (Token, string, error) {
	var idb [6]byte
	var sec [32]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return Token{}, "", fmt.Errorf("token id: %w", err)
	}
	if _, err := rand.Read(sec[:]); err != nil {
		return Token{}, "", fmt.Errorf("token secret: %w", err)
	}
	id := hex.EncodeToString(idb[:])
	secret := prefix + id + "_" + base64.RawURLEncoding.EncodeToString(sec[:])
	if labels == nil {
		labels = map[string]string{}
	}
	return Token{ID: id, Name: name, Labels: labels, Hash: hash(secret), CreatedAt: now.UTC()}, secret, nil
}

// IDOf extracts the token id from a presented secret without checking it.
func IDOf(secret string) (string, bool) {
	rest, ok := strings.CutPrefix(secret, prefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, "_")
	if !ok || len(id) != 12 {
		return "", false
	}
	return id, true
}

// Matches reports, in constant time, whether secret is this token's secret.
func (t *Token) Matches(secret string) bool {
	return subtle.ConstantTimeCompare(hash(secret), t.Hash) == 1
}

// The secret carries 256 random bits, so a fast hash is enough: there is
// nothing to brute-force that a slow KDF would protect.
func hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Label limits (the rules of "Server labels").
const (
	MaxLabels      = 20
	MaxLabelKeyLen = 63
	MaxLabelValLen = 253
)

// ValidateName checks a token name; names are how inventory files refer to tokens.
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("name: must not be empty")
	case len(name) > 128:
		return fmt.Errorf("name: %d characters, at most 128", utf8.RuneCountInString(name))
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		return fmt.Errorf("name %q: must not contain whitespace", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("name %q: must not contain control characters", name)
	}
	return nil
}

// ValidateLabels reports every violation of the label rules at once.
func ValidateLabels(labels map[string]string) error {
	var errs []error
	if len(labels) > MaxLabels {
		errs = append(errs, fmt.Errorf("labels: %d labels, at most %d", len(labels), MaxLabels))
	}
	for _, k := range sortedKeys(labels) {
		v := labels[k]
		n := utf8.RuneCountInString(k)
		switch {
		case n == 0:
			errs = append(errs, errors.New("labels: empty key"))
		case n > MaxLabelKeyLen:
			errs = append(errs, fmt.Errorf("labels.%s: key has %d characters, at most %d", k, n, MaxLabelKeyLen))
		}
		if strings.IndexFunc(k, unicode.IsSpace) >= 0 {
			errs = append(errs, fmt.Errorf("labels.%q: key must not contain whitespace", k))
		}
		if strings.Contains(k, "=") {
			errs = append(errs, fmt.Errorf("labels.%s: key must not contain '='", k))
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			errs = append(errs, fmt.Errorf("labels.%q: key and value must be valid UTF-8", k))
		}
		if strings.IndexFunc(k, unicode.IsControl) >= 0 || strings.IndexFunc(v, unicode.IsControl) >= 0 {
			errs = append(errs, fmt.Errorf("labels.%q: key and value must not contain control characters (NUL, newlines, escapes)", k))
		}
		if m := utf8.RuneCountInString(v); m > MaxLabelValLen {
			errs = append(errs, fmt.Errorf("labels.%s: value has %d characters, at most %d", k, m, MaxLabelValLen))
		}
	}
	return errors.Join(errs...)
}
