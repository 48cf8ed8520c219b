// Package keyring is the signed keyring an estate offers its updaters: the
// minisign keys that may sign packages, each with its window, and the keys
// revoked, under a serial that only grows. A root key pinned on each host
// (the updater's trust.root_keys) signs it, so the server that offers it
// can never make a host trust a key: rotating an estate's signing key is
// one signed keyring and one package offer, with no host touched.
//
// The document is JSON:
//
//	{
//	  "serial": 2,
//	  "issued": "2026-12-01T00:00:00Z",
//	  "keys": [{"key": "RWQ…", "not_before": "…", "not_after": "…", "comment": "…"}],
//	  "revoked": [{"key_id": "3E1B0F7A9C2D4E60", "reason": "…"}]
//	}
//
// signed with `minisign -S -s root.key -m keyring.json`. Parse and Verify
// are used by myriarchd (estate load) and by the updater alike.
package keyring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"aead.dev/minisign"
)

// Bounds of a keyring document.
const (
	MaxSize    = 64 << 10
	MaxKeys    = 64
	MaxRevoked = 1024
	maxText    = 256 // a comment or a reason
)

var (
	// ErrMalformed: the keyring or its signature cannot be read.
	ErrMalformed = errors.New("malformed keyring")
	// ErrUnknownRoot: the keyring is signed by a key that is not a pinned root.
	ErrUnknownRoot = errors.New("keyring not signed by a pinned root key")
	// ErrBadSignature: the keyring's signature does not verify.
	ErrBadSignature = errors.New("keyring signature does not verify")
)

// Key is a key the keyring trusts, and when it may sign (zero: no bound).
type Key struct {
	Key       string    `json:"key"`
	NotBefore time.Time `json:"not_before,omitzero"`
	NotAfter  time.Time `json:"not_after,omitzero"`
	Comment   string    `json:"comment,omitempty"`

	public minisign.PublicKey
}

// Public is the parsed key.
func (k Key) Public() minisign.PublicKey { return k.public }

// Revoked is a key no artifact may be trusted for any more, by its
// minisign key ID (16 hexadecimal digits, as minisign prints it).
type Revoked struct {
	KeyID  string `json:"key_id"`
	Reason string `json:"reason,omitempty"`

	id uint64
}

// ID is the revoked key's ID.
func (r Revoked) ID() uint64 { return r.id }

// Document is a parsed keyring.
type Document struct {
	Serial  uint64    `json:"serial"`
	Issued  time.Time `json:"issued,omitzero"`
	Keys    []Key     `json:"keys"`
	Revoked []Revoked `json:"revoked"`
}

// RevokedReason says why the key id is revoked, and whether it is.
func (d *Document) RevokedReason(id uint64) (string, bool) {
	for _, r := range d.Revoked {
		if r.id == id {
			if r.Reason == "" {
				return fmt.Sprintf("revoked by keyring serial %d", d.Serial), true
			}
			return fmt.Sprintf("revoked by keyring serial %d: %s", d.Serial, r.Reason), true
		}
	}
	return "", false
}

var keyIDPattern = regexp.MustCompile(`^[0-9A-Fa-f]{16}$`)

// Parse reads a keyring document strictly (no unknown field, one JSON
// value) and checks it; every problem is named with its path, all at once.
func Parse(data []byte) (*Document, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(data), MaxSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d Document
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrMalformed)
	}
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if d.Serial == 0 {
		add("serial: must be 1 or more")
	}
	if len(d.Keys) > MaxKeys {
		add("keys: %d keys, at most %d", len(d.Keys), MaxKeys)
	}
	if len(d.Revoked) > MaxRevoked {
		add("revoked: %d keys, at most %d", len(d.Revoked), MaxRevoked)
	}
	ids := map[uint64]string{}
	for i := range d.Keys {
		k := &d.Keys[i]
		if err := k.public.UnmarshalText([]byte(strings.TrimSpace(k.Key))); err != nil {
			add("keys[%d].key: not a minisign public key: %v", i, err)
			continue
		}
		if prev, dup := ids[k.public.ID()]; dup {
			add("keys[%d].key: key ID %016X is listed twice (also %s)", i, k.public.ID(), prev)
		}
		ids[k.public.ID()] = fmt.Sprintf("keys[%d]", i)
		if !k.NotBefore.IsZero() && !k.NotAfter.IsZero() && !k.NotAfter.After(k.NotBefore) {
			add("keys[%d].not_after: %s is not after not_before (%s)", i, k.NotAfter.UTC().Format(time.RFC3339), k.NotBefore.UTC().Format(time.RFC3339))
		}
		if len(k.Comment) > maxText {
			add("keys[%d].comment: %d bytes, at most %d", i, len(k.Comment), maxText)
		}
	}
	revoked := map[uint64]bool{}
	for i := range d.Revoked {
		r := &d.Revoked[i]
		if !keyIDPattern.MatchString(r.KeyID) {
			add("revoked[%d].key_id: %q is not a minisign key ID (16 hexadecimal digits)", i, trim(r.KeyID))
			continue
		}
		fmt.Sscanf(r.KeyID, "%x", &r.id)
		if where, listed := ids[r.id]; listed {
			add("revoked[%d].key_id: %016X is revoked and trusted (%s) at once", i, r.id, where)
		}
		if revoked[r.id] {
			add("revoked[%d].key_id: %016X is listed twice", i, r.id)
		}
		revoked[r.id] = true
		if len(r.Reason) > maxText {
			add("revoked[%d].reason: %d bytes, at most %d", i, len(r.Reason), maxText)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return &d, nil
}

// CheckSignature reads a minisign signature (the text of a .minisig file)
// without checking it against a key: what myriarchd can tell of a
// keyring's signature, holding no root key.
func CheckSignature(sig []byte) (keyID uint64, err error) {
	var s minisign.Signature
	if err := s.UnmarshalText(sig); err != nil {
		return 0, fmt.Errorf("%w: signature: %v", ErrMalformed, err)
	}
	return s.KeyID, nil
}

// Verify checks that one of roots signed data and parses it.
func Verify(data, sig []byte, roots []minisign.PublicKey) (*Document, error) {
	id, err := CheckSignature(sig)
	if err != nil {
		return nil, err
	}
	var root *minisign.PublicKey
	for i := range roots {
		if roots[i].ID() == id {
			root = &roots[i]
		}
	}
	if root == nil {
		return nil, fmt.Errorf("%w: signed by key ID %016X, pinned roots are %s", ErrUnknownRoot, id, rootIDs(roots))
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(data), MaxSize)
	}
	if !minisign.Verify(*root, data, sig) {
		return nil, fmt.Errorf("%w (root key ID %016X)", ErrBadSignature, id)
	}
	return Parse(data)
}

func rootIDs(roots []minisign.PublicKey) string {
	if len(roots) == 0 {
		return "none"
	}
	ids := make([]string, len(roots))
	for i, r := range roots {
		ids[i] = fmt.Sprintf("%016X", r.ID())
	}
	return strings.Join(ids, ", ")
}

// ParseRoots parses pinned root keys (a key line or a whole .pub file
// each); each bad one is named under where with its index.
func ParseRoots(where string, texts []string) ([]minisign.PublicKey, error) {
	var out []minisign.PublicKey
	var errs []error
	for i, t := range texts {
		var k minisign.PublicKey
		if err := k.UnmarshalText([]byte(strings.TrimSpace(t))); err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: not a minisign public key: %w", where, i, err))
			continue
		}
		out = append(out, k)
	}
	return out, errors.Join(errs...)
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
