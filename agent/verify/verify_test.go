package verify

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"
	"golang.org/x/crypto/blake2b"
)

func keypair(t *testing.T) (minisign.PublicKey, minisign.PrivateKey) {
	t.Helper()
	pub, priv, err := minisign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func TestSignature(t *testing.T) {
	pub, priv := keypair(t)
	otherPub, otherPriv := keypair(t)
	msg := bytes.Repeat([]byte("collector"), 10000)
	path := filepath.Join(t.TempDir(), "artifact")
	if err := os.WriteFile(path, msg, 0o600); err != nil {
		t.Fatal(err)
	}
	digest := blake2b.Sum512(msg)
	hashedSig := minisign.NewReader(bytes.NewReader(msg))
	if _, err := hashedSig.Read(make([]byte, len(msg)+1)); err != nil {
		t.Fatal(err)
	}
	goodHashed := hashedSig.Sign(priv)
	goodLegacy := minisign.Sign(priv, msg)
	wrongMsg := minisign.Sign(priv, []byte("something else"))
	byOther := minisign.Sign(otherPriv, msg)
	tampered := bytes.Replace(goodHashed, []byte("timestamp:"), []byte("timestamp:9"), 1)
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

	cases := []struct {
		name    string
		keys    []Key
		sig     []byte
		content Content
		want    error
	}{
		{"pre-hashed, digest from download", []Key{{PublicKey: pub}}, goodHashed, Content{BLAKE2b512: digest[:], Path: path}, nil},
		{"pre-hashed, digest from file", []Key{{PublicKey: otherPub}, {PublicKey: pub}}, goodHashed, Content{Path: path}, nil},
		{"legacy", []Key{{PublicKey: pub}}, goodLegacy, Content{Path: path}, nil},
		{"missing signature", []Key{{PublicKey: pub}}, nil, Content{Path: path}, ErrNoSignature},
		{"garbage signature", []Key{{PublicKey: pub}}, []byte("not a signature"), Content{Path: path}, ErrMalformedSignature},
		{"unknown key", []Key{{PublicKey: pub}}, byOther, Content{Path: path}, ErrUnknownKey},
		{"signature of other content", []Key{{PublicKey: pub}}, wrongMsg, Content{Path: path}, ErrBadSignature},
		{"tampered trusted comment", []Key{{PublicKey: pub}}, tampered, Content{BLAKE2b512: digest[:], Path: path}, ErrBadSignature},
		{"wrong digest", []Key{{PublicKey: pub}}, goodHashed, Content{BLAKE2b512: make([]byte, 64), Path: path}, ErrBadSignature},
		{"no keys configured", nil, goodHashed, Content{Path: path}, ErrNoKeys},
		{"a key in its window", []Key{{PublicKey: pub, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}}, goodHashed, Content{Path: path}, nil},
		{"an expired key", []Key{{PublicKey: pub, NotAfter: now.Add(-time.Second)}}, goodHashed, Content{Path: path}, ErrKeyNotValid},
		{"a key expiring now", []Key{{PublicKey: pub, NotAfter: now}}, goodHashed, Content{Path: path}, ErrKeyNotValid},
		{"a key not valid yet", []Key{{PublicKey: pub, NotBefore: now.Add(time.Hour)}}, goodHashed, Content{Path: path}, ErrKeyNotValid},
		{"a rotated key listed twice, once expired", []Key{{PublicKey: pub, NotAfter: now.Add(-time.Hour)}, {PublicKey: pub, NotBefore: now.Add(-time.Minute)}},
			goodHashed, Content{Path: path}, nil},
		{"a revoked key", []Key{{PublicKey: pub, Revoked: "revoked by keyring serial 2"}}, goodHashed, Content{Path: path}, ErrKeyRevoked},
		{"a revoked key is refused though also pinned", []Key{{PublicKey: pub}, {PublicKey: pub, Revoked: "revoked by keyring serial 2"}}, goodHashed, Content{Path: path}, ErrKeyRevoked},
		{"a key revoked by its ID alone", []Key{RevokedKey(pub.ID(), "revoked by keyring serial 2")}, goodHashed, Content{Path: path}, ErrKeyRevoked},
		{"an expired key does not verify other keys' signatures", []Key{{PublicKey: pub, NotAfter: now.Add(-time.Hour)}}, byOther, Content{Path: path}, ErrUnknownKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Signature(tc.keys, now, tc.sig, tc.content)
			if tc.want == nil && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSHA256(t *testing.T) {
	sum := sha256.Sum256([]byte("x"))
	if err := SHA256(sum[:], sum[:]); err != nil {
		t.Fatal(err)
	}
	other := sha256.Sum256([]byte("y"))
	if err := SHA256(other[:], sum[:]); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("got %v", err)
	}
	if err := SHA256(nil, sum[:]); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("got %v", err)
	}
}

func TestParseKeys(t *testing.T) {
	pub, _ := keypair(t)
	text, _ := pub.MarshalText() // whole .pub file, comment line included
	keys, err := ParseKeys([]string{pub.String(), string(text) + "\n"})
	if err != nil || len(keys) != 2 || keys[0].ID() != pub.ID() || keys[1].ID() != pub.ID() {
		t.Fatalf("keys %v err %v", keys, err)
	}
	_, err = ParseKeys([]string{"RWbogus", string(text), ""})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("trust.minisign_public_keys[0]")) ||
		!bytes.Contains([]byte(err.Error()), []byte("trust.minisign_public_keys[2]")) {
		t.Fatalf("want both bad entries reported, got %v", err)
	}
}

// An expired key's refusal says when the key could sign and when it is.
func TestExpiredKeySaysWhen(t *testing.T) {
	pub, priv := keypair(t)
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	err := Signature([]Key{{PublicKey: pub, NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-24 * time.Hour)}}, now,
		minisign.Sign(priv, []byte("x")), Content{Path: writeTemp(t, "x")})
	want := "valid from 2026-12-05T12:00:00Z until 2026-12-06T12:00:00Z, and it is 2026-12-07T12:00:00Z"
	if !errors.Is(err, ErrKeyNotValid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want %q", err, want)
	}
}

func TestParseKeyring(t *testing.T) {
	pub, _ := keypair(t)
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	keys, err := ParseKeyring("trust.minisign_keys", []KeySpec{{Text: pub.String(), NotBefore: now, NotAfter: now.Add(time.Hour)}, {Text: pub.String()}})
	if err != nil || len(keys) != 2 || !keys[0].ValidAt(now) || keys[0].ValidAt(now.Add(time.Hour)) || !keys[1].ValidAt(now.Add(1000*time.Hour)) {
		t.Fatalf("%v %v", keys, err)
	}
	_, err = ParseKeyring("trust.minisign_keys", []KeySpec{{Text: "RWbogus"}, {Text: pub.String(), NotBefore: now, NotAfter: now}})
	if err == nil || !strings.Contains(err.Error(), "trust.minisign_keys[0].key") || !strings.Contains(err.Error(), "trust.minisign_keys[1]: not_after") {
		t.Fatalf("want both bad entries reported, got %v", err)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
