package verify

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

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

	cases := []struct {
		name    string
		keys    []minisign.PublicKey
		sig     []byte
		content Content
		want    error
	}{
		{"pre-hashed, digest from download", []minisign.PublicKey{pub}, goodHashed, Content{BLAKE2b512: digest[:], Path: path}, nil},
		{"pre-hashed, digest from file", []minisign.PublicKey{otherPub, pub}, goodHashed, Content{Path: path}, nil},
		{"legacy", []minisign.PublicKey{pub}, goodLegacy, Content{Path: path}, nil},
		{"missing signature", []minisign.PublicKey{pub}, nil, Content{Path: path}, ErrNoSignature},
		{"garbage signature", []minisign.PublicKey{pub}, []byte("not a signature"), Content{Path: path}, ErrMalformedSignature},
		{"unknown key", []minisign.PublicKey{pub}, byOther, Content{Path: path}, ErrUnknownKey},
		{"signature of other content", []minisign.PublicKey{pub}, wrongMsg, Content{Path: path}, ErrBadSignature},
		{"tampered trusted comment", []minisign.PublicKey{pub}, tampered, Content{BLAKE2b512: digest[:], Path: path}, ErrBadSignature},
		{"wrong digest", []minisign.PublicKey{pub}, goodHashed, Content{BLAKE2b512: make([]byte, 64), Path: path}, ErrBadSignature},
		{"no keys configured", nil, goodHashed, Content{Path: path}, ErrNoKeys},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Signature(tc.keys, tc.sig, tc.content)
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
