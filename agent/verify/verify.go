// Package verify checks a downloaded artifact against its offer: the
// SHA-256 content hash, and a detached minisign signature that must come
// from one of the public keys pinned in the updater's local configuration.
// The OpAMP server only ever supplies the signature, never a key, so a
// compromised server cannot make the updater run its code.
//
// Signatures are checked from digests computed while downloading
// (BLAKE2b-512 for pre-hashed signatures, the default of minisign ≥ 0.10),
// so verification never reads the artifact again. Legacy non-pre-hashed
// signatures need the whole message and are accepted only for files up to
// MaxLegacySize.
package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"aead.dev/minisign"
	"golang.org/x/crypto/blake2b"
)

var (
	// ErrHashMismatch: the content's SHA-256 is not the offered content_hash.
	ErrHashMismatch = errors.New("content hash mismatch")
	// ErrNoSignature: a signature is required and the offer has none.
	ErrNoSignature = errors.New("no signature")
	// ErrMalformedSignature: the signature is not a minisign signature.
	ErrMalformedSignature = errors.New("malformed minisign signature")
	// ErrUnknownKey: the signature's key ID is not one of the trusted keys.
	ErrUnknownKey = errors.New("signature key is not trusted")
	// ErrBadSignature: the signature does not verify.
	ErrBadSignature = errors.New("signature does not verify")
	// ErrNoKeys: signature checking was asked for with no trusted key.
	ErrNoKeys = errors.New("no trusted minisign public key configured")
	// ErrKeyNotValid: the signature's key is trusted, but not at this
	// time (trust.minisign_keys' not_before and not_after).
	ErrKeyNotValid = errors.New("signature key is not valid now")
	// ErrKeyRevoked: the signature's key was revoked (the host's signed
	// keyring: agent/keyring), whether or not it is pinned.
	ErrKeyRevoked = errors.New("signature key is revoked")
)

// Key is a trusted minisign public key and when it may sign: from
// NotBefore until NotAfter (zero: no bound). A key with a Revoked reason
// never verifies anything, and refuses a signature even when another
// entry trusts the same key.
type Key struct {
	minisign.PublicKey
	NotBefore, NotAfter time.Time
	Revoked             string
}

// ValidAt reports whether the key may sign at t.
func (k Key) ValidAt(t time.Time) bool {
	return (k.NotBefore.IsZero() || !t.Before(k.NotBefore)) && (k.NotAfter.IsZero() || t.Before(k.NotAfter))
}

// window says when a key may sign, for a refusal.
func (k Key) window() string {
	switch {
	case !k.NotBefore.IsZero() && !k.NotAfter.IsZero():
		return "valid from " + k.NotBefore.UTC().Format(time.RFC3339) + " until " + k.NotAfter.UTC().Format(time.RFC3339)
	case !k.NotAfter.IsZero():
		return "valid until " + k.NotAfter.UTC().Format(time.RFC3339)
	default:
		return "valid from " + k.NotBefore.UTC().Format(time.RFC3339)
	}
}

// KeySpec is a key as configured: its text and its window.
type KeySpec struct {
	Text                string
	NotBefore, NotAfter time.Time
}

// ParseKeyring parses keys with their windows; each bad entry is reported
// under where (trust.minisign_keys) with its index.
func ParseKeyring(where string, specs []KeySpec) ([]Key, error) {
	var keys []Key
	var errs []error
	for i, s := range specs {
		var k minisign.PublicKey
		if err := k.UnmarshalText([]byte(strings.TrimSpace(s.Text))); err != nil {
			errs = append(errs, fmt.Errorf("%s[%d].key: %w", where, i, err))
			continue
		}
		if !s.NotBefore.IsZero() && !s.NotAfter.IsZero() && !s.NotAfter.After(s.NotBefore) {
			errs = append(errs, fmt.Errorf("%s[%d]: not_after (%s) is not after not_before (%s)", where, i,
				s.NotAfter.UTC().Format(time.RFC3339), s.NotBefore.UTC().Format(time.RFC3339)))
			continue
		}
		keys = append(keys, Key{PublicKey: k, NotBefore: s.NotBefore, NotAfter: s.NotAfter})
	}
	return keys, errors.Join(errs...)
}

// MaxLegacySize bounds files verified with a legacy (non-pre-hashed)
// signature, which needs the whole file in memory.
const MaxLegacySize = 64 << 20

// ParseKeys parses minisign public keys, each either the base64 key line
// ("RW…") or the whole content of a .pub file. Every bad entry is reported
// with its index.
func ParseKeys(texts []string) ([]Key, error) {
	var keys []Key
	var errs []error
	for i, t := range texts {
		line := strings.TrimSpace(t) // UnmarshalText drops a comment line itself
		var k minisign.PublicKey
		if err := k.UnmarshalText([]byte(line)); err != nil {
			errs = append(errs, fmt.Errorf("trust.minisign_public_keys[%d]: %w", i, err))
			continue
		}
		keys = append(keys, Key{PublicKey: k})
	}
	return keys, errors.Join(errs...)
}

// SHA256 compares the computed digest with the offered one in constant time.
func SHA256(offered, computed []byte) error {
	if len(offered) != 32 {
		return fmt.Errorf("%w: offered content_hash has %d bytes, want 32", ErrHashMismatch, len(offered))
	}
	if subtle.ConstantTimeCompare(offered, computed) != 1 {
		return fmt.Errorf("%w: offered %s, downloaded file has %s", ErrHashMismatch, hex.EncodeToString(offered), hex.EncodeToString(computed))
	}
	return nil
}

// Content identifies the verified bytes: the BLAKE2b-512 digest when it was
// computed while downloading, and the file (read only for legacy signatures
// or when the digest is missing).
type Content struct {
	BLAKE2b512 []byte
	// SHA256 is the content's SHA-256, checked against the offer's
	// content hash already (what a Sigstore bundle signs).
	SHA256 []byte
	Path   string
}

// Signature verifies a detached minisign signature (the text of a .minisig
// file) over content against the trusted keys at now. The key is chosen by
// the signature's key ID; only a key in keys that is valid at now can ever
// verify: an artifact signed only by an expired key, or one not valid
// yet, is refused, and one signed by a revoked key always is.
func Signature(keys []Key, now time.Time, signature []byte, c Content) error {
	if len(keys) == 0 {
		return ErrNoKeys
	}
	if len(bytes.TrimSpace(signature)) == 0 {
		return ErrNoSignature
	}
	var sig minisign.Signature
	if err := sig.UnmarshalText(signature); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedSignature, err)
	}
	for i := range keys {
		if keys[i].ID() == sig.KeyID && keys[i].Revoked != "" {
			return fmt.Errorf("%w: key ID %016X is %s", ErrKeyRevoked, sig.KeyID, keys[i].Revoked)
		}
	}
	var key *minisign.PublicKey
	var notNow []string
	for i := range keys {
		if keys[i].ID() != sig.KeyID {
			continue
		}
		if !keys[i].ValidAt(now) {
			notNow = append(notNow, keys[i].window())
			continue
		}
		key = &keys[i].PublicKey
		break
	}
	switch {
	case key == nil && len(notNow) > 0:
		return fmt.Errorf("%w: key ID %016X is %s, and it is %s", ErrKeyNotValid, sig.KeyID, strings.Join(notNow, ", or "), now.UTC().Format(time.RFC3339))
	case key == nil:
		return fmt.Errorf("%w: key ID %016X", ErrUnknownKey, sig.KeyID)
	}
	switch sig.Algorithm {
	case minisign.HashEdDSA:
		digest := c.BLAKE2b512
		if len(digest) != blake2b.Size {
			d, err := fileBLAKE2b(c.Path)
			if err != nil {
				return err
			}
			digest = d
		}
		return verifyDigest(*key, sig, digest)
	case minisign.EdDSA:
		st, err := os.Stat(c.Path)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if st.Size() > MaxLegacySize {
			return fmt.Errorf("%w: legacy (non-pre-hashed) signature on a %d-byte file, limit %d; sign with minisign -H",
				ErrBadSignature, st.Size(), MaxLegacySize)
		}
		msg, err := os.ReadFile(c.Path)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if !minisign.Verify(*key, msg, signature) {
			return fmt.Errorf("%w (key ID %016X)", ErrBadSignature, sig.KeyID)
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown algorithm 0x%04x", ErrMalformedSignature, sig.Algorithm)
	}
}

// verifyDigest is minisign's pre-hashed verification, given the digest:
// the Ed25519 signature over BLAKE2b-512(message), then the global
// signature over signature ‖ trusted comment.
func verifyDigest(key minisign.PublicKey, sig minisign.Signature, digest []byte) error {
	pub, err := rawKey(key)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, digest, sig.Signature[:]) {
		return fmt.Errorf("%w (key ID %016X)", ErrBadSignature, sig.KeyID)
	}
	global := append(append([]byte{}, sig.Signature[:]...), sig.TrustedComment...)
	if !ed25519.Verify(pub, global, sig.CommentSignature[:]) {
		return fmt.Errorf("%w: trusted comment signature (key ID %016X)", ErrBadSignature, sig.KeyID)
	}
	return nil
}

// rawKey extracts the Ed25519 key: a minisign public key is base64 of
// algorithm (2 bytes) ‖ key ID (8) ‖ key (32).
func rawKey(k minisign.PublicKey) (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(k.String())
	if err != nil || len(raw) != 2+8+ed25519.PublicKeySize {
		return nil, fmt.Errorf("verify: cannot decode public key %016X", k.ID())
	}
	return ed25519.PublicKey(raw[10:]), nil
}

func fileBLAKE2b(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	r := minisignDigestReader(f)
	return r()
}

// RevokedKey stands for a key known only by its ID (a keyring revokes it
// without listing it): it refuses, as revoked, every signature made with
// that key ID, and never verifies one.
func RevokedKey(id uint64, why string) Key {
	raw := make([]byte, 2+8+ed25519.PublicKeySize)
	copy(raw, "Ed")
	binary.LittleEndian.PutUint64(raw[2:], id)
	var k minisign.PublicKey
	_ = k.UnmarshalText([]byte(base64.StdEncoding.EncodeToString(raw))) // well-formed by construction
	return Key{PublicKey: k, Revoked: why}
}
