package keyring_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	akeyring "github.com/myriarch/myriarch/agent/keyring"
	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/internal/keyring"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
)

func TestRingRotatesAndRevokes(t *testing.T) {
	dir := t.TempDir()
	root, other, k1, k2 := keyringtest.NewKey(t), keyringtest.NewKey(t), keyringtest.NewKey(t), keyringtest.NewKey(t)
	pinned := []verify.Key{{PublicKey: k1.Public}}
	r, err := akeyring.Open(dir, []string{root.Text})
	if err != nil {
		t.Fatal(err)
	}
	if keys, err := r.Keys(pinned); err != nil || len(keys) != 1 || keys[0].Revoked != "" {
		t.Fatalf("before any keyring: %+v %v", keys, err)
	}
	if got := r.Attributes(); got[keyring.AttrSerial] != "0" || got[keyring.AttrRefused] != "" {
		t.Fatalf("attributes %v", got)
	}
	rotate := keyringtest.Sign(root, keyringtest.Doc{Serial: 2, Keys: []keyringtest.DocKey{{Key: k2.Text}},
		Revoked: []keyringtest.DocRevoked{{KeyID: k1.ID(), Reason: "rotated"}}}.JSON(t))
	if serial, err := r.Apply(rotate.Encode()); err != nil || serial != 2 {
		t.Fatalf("apply: %d %v", serial, err)
	}
	check := func(r *akeyring.Ring) {
		t.Helper()
		keys, err := r.Keys(pinned)
		if err != nil || len(keys) != 3 {
			t.Fatalf("keys %+v %v", keys, err)
		}
		if keys[2].ID() != k1.Public.ID() || keys[2].Revoked == "" {
			t.Errorf("the revocation by key ID: %+v", keys[2])
		}
		if keys[0].ID() != k1.Public.ID() || keys[0].Revoked != "revoked by keyring serial 2: rotated" {
			t.Errorf("the pinned key: %+v", keys[0])
		}
		if keys[1].ID() != k2.Public.ID() || keys[1].Revoked != "" {
			t.Errorf("the new key: %+v", keys[1])
		}
	}
	check(r)

	// Refused: not newer, or not signed by a root; the keyring in force stays.
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"the same serial again", rotate.Encode(), "serial 2 offered, 2 in force"},
		{"an older serial (bringing k1 back)", keyringtest.Sign(root, keyringtest.Doc{Serial: 1, Keys: []keyringtest.DocKey{{Key: k1.Text}}}.JSON(t)).Encode(), "serial 1 offered, 2 in force"},
		{"signed by another key", keyringtest.Sign(other, keyringtest.Doc{Serial: 9}.JSON(t)).Encode(), "not signed by a pinned root key"},
		{"signed by a revoked signing key", keyringtest.Sign(k1, keyringtest.Doc{Serial: 9}.JSON(t)).Encode(), "not signed by a pinned root key"},
		{"not a keyring message", []byte(`{"keyring":1}`), "malformed keyring"},
		{"a message of 1 MiB", []byte(`{"keyring":"` + strings.Repeat("A", 1<<20) + `"}`), "malformed keyring: a message of 1048590 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serial, err := r.Apply(tc.data)
			if err == nil || serial != 2 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serial %d, err %v; want a refusal saying %q", serial, err, tc.want)
			}
			if got := r.Attributes()[keyring.AttrRefused]; !strings.HasPrefix(got, "sha256:") || !strings.Contains(got, tc.want) {
				t.Fatalf("refused attribute %q", got)
			}
			check(r)
		})
	}

	// Kept across a restart.
	again, err := akeyring.Open(dir, []string{root.Text})
	if err != nil {
		t.Fatal(err)
	}
	check(again)

	// A kept keyring that no longer verifies refuses every minisign check
	// (its revocations cannot be honoured), until a good one comes.
	path := filepath.Join(dir, akeyring.File)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(data), `"signature": "`, `"signature": "x`, 1)), 0o600)
	broken, err := akeyring.Open(dir, []string{root.Text})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := broken.Keys(pinned); err == nil || !strings.Contains(err.Error(), "no longer verifies") {
		t.Fatalf("a tampered kept keyring: %v", err)
	}
	if got := broken.Attributes(); got[keyring.AttrSerial] != "0" || !strings.Contains(got[keyring.AttrRefused], "no longer verifies") {
		t.Fatalf("attributes %v", got)
	}
	if serial, err := broken.Apply(rotate.Encode()); err != nil || serial != 2 {
		t.Fatalf("a good keyring after a broken one: %d %v", serial, err)
	}
	check(broken)
	if got := broken.Attributes(); got[keyring.AttrRefused] != "" {
		t.Fatalf("attributes after repair %v", got)
	}
}

func TestOpenNeedsRoots(t *testing.T) {
	if _, err := akeyring.Open(t.TempDir(), nil); err == nil {
		t.Fatal("no roots accepted")
	}
	if _, err := akeyring.Open(t.TempDir(), []string{"RWnope"}); err == nil || !strings.Contains(err.Error(), "trust.root_keys[0]") {
		t.Fatalf("bad root: %v", err)
	}
}
