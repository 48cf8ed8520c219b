package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
)

// trust.minisign_keys loads with its windows, and reaches the install
// engine as key specs.
func TestKeyringLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "updater.yaml")
	body := minimal + "trust:\n  minisign_keys:\n    - key: " + testKey + "\n      not_after: 2027-01-01T00:00:00Z\n" +
		"    - {key: " + testKey + ", not_before: 2026-12-01T00:00:00+01:00}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ring := cfg.Trust.Keyring()
	if len(ring) != 2 || ring[0].Text != testKey || !ring[0].NotAfter.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || !ring[0].NotBefore.IsZero() ||
		!ring[1].NotBefore.Equal(time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)) || !ring[1].NotAfter.IsZero() {
		t.Fatalf("keyring %+v", ring)
	}
}

// The warning of a keyring about to leave the host without a valid key.
func TestKeysExpiring(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	key := func(notAfter time.Time) MinisignKey { return MinisignKey{Key: testKey, NotAfter: notAfter} }
	for _, tc := range []struct {
		name  string
		trust TrustConfig
		want  string // "" for no warning
	}{
		{"no keyring", TrustConfig{}, ""},
		{"a pinned key without a window", TrustConfig{MinisignPublicKeys: []string{testKey}, MinisignKeys: []MinisignKey{key(now.Add(time.Hour))}}, ""},
		{"a key without an end", TrustConfig{MinisignKeys: []MinisignKey{key(now.Add(time.Hour)), {Key: testKey}}}, ""},
		{"the last key lasts past 30 days", TrustConfig{MinisignKeys: []MinisignKey{key(now.Add(time.Hour)), key(now.Add(31 * 24 * time.Hour))}}, ""},
		{"the only key expires in 10 days", TrustConfig{MinisignKeys: []MinisignKey{key(now.Add(10 * 24 * time.Hour))}},
			"trust.minisign_keys: the last key expires on 2026-12-17T12:00:00Z, within 30 days"},
		{"every key expired", TrustConfig{MinisignKeys: []MinisignKey{key(now.Add(-time.Hour)), key(now.Add(-48 * time.Hour))}},
			"trust.minisign_keys: every key expired, the last on 2026-12-07T11:00:00Z: every signed package offer will be refused"},
	} {
		got := tc.trust.keysExpiring(now, nil, "")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// trust.root_keys: each must be a minisign key (named by its index, with
// its line); a host pinned only with a root key requires signatures
// without a warning, its signing keys coming from the keyring.
func TestRootKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "updater.yaml")
	body := minimal + "trust:\n  require_signature: true\n  root_keys:\n    - " + testKey + "\n    - RWnotakey\n"
	os.WriteFile(path, []byte(body), 0o600)
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "trust.root_keys[1]") || !strings.Contains(err.Error(), "not a minisign public key") {
		t.Fatalf("a bad root key: %v", err)
	}
	body = minimal + "trust:\n  require_signature: true\n  root_keys: [" + testKey + "]\n"
	os.WriteFile(path, []byte(body), 0o600)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range Warnings(path, cfg) {
		if strings.Contains(w, "every package offer will be refused") {
			t.Fatalf("warning %q", w)
		}
	}
}

// With trust.root_keys, the keys of the kept signed keyring count: a
// keyring whose last key expires soon is warned about, and one that brings
// a later key quiets the warning about the pinned keys.
func TestKeysExpiringWithTheKeyring(t *testing.T) {
	root, k := keyringtest.NewKey(t), keyringtest.NewKey(t)
	for _, tc := range []struct {
		name, pinnedEnd, ringEnd, want string
	}{
		{"the keyring's only key expires in 10 days", "", time.Now().Add(10 * 24 * time.Hour).UTC().Format(time.RFC3339),
			"the keyring (serial 3): the last key expires on"},
		{"pinned keys expire, the keyring's key lasts", time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339),
			time.Now().Add(365 * 24 * time.Hour).UTC().Format(time.RFC3339), ""},
		{"both expire soon", time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339), time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339),
			"trust.minisign_keys and the keyring (serial 3): the last key expires on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			os.MkdirAll(state, 0o700)
			data, _ := json.Marshal(keyringtest.Sign(root, keyringtest.Doc{Serial: 3, Keys: []keyringtest.DocKey{{Key: k.Text, NotAfter: tc.ringEnd}}}.JSON(t)))
			os.WriteFile(filepath.Join(state, "keyring.json"), data, 0o600)
			body := minimal + "state_dir: " + state + "\ntrust:\n  require_signature: true\n  root_keys: [" + root.Text + "]\n"
			if tc.pinnedEnd != "" {
				body += "  minisign_keys:\n    - {key: " + testKey + ", not_after: " + tc.pinnedEnd + "}\n"
			}
			path := filepath.Join(dir, "updater.yaml")
			os.WriteFile(path, []byte(body), 0o600)
			cfg, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, w := range Warnings(path, cfg) {
				if strings.Contains(w, "expire") {
					got = w
				}
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("warning %q, want %q", got, tc.want)
			}
		})
	}
}
