package estate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
)

// trust/keyring.json with its signature is offered as it is; myriarchd
// checks its form and that it is signed, holding no root key.
func TestKeyringLoads(t *testing.T) {
	root, k := keyringtest.NewKey(t), keyringtest.NewKey(t)
	s := keyringtest.Sign(root, keyringtest.Doc{Serial: 4, Keys: []keyringtest.DocKey{{Key: k.Text}}}.JSON(t))
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{KeyringFile: string(s.Keyring), KeyringSignatureFile: s.Signature})
	e, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e.Keyring == nil || e.Keyring.Doc.Serial != 4 || e.Keyring.RootKeyID != root.Public.ID() || string(e.Keyring.Signed.Keyring) != string(s.Keyring) {
		t.Fatalf("keyring %+v", e.Keyring)
	}
	if e, err := Load(t.TempDir()); err != nil || e.Keyring != nil {
		t.Fatalf("no keyring: %v %+v", err, e)
	}
}

// Every bad keyring is a problem naming its file, and the load fails (the
// server keeps the estate in force).
func TestBadKeyrings(t *testing.T) {
	root, k := keyringtest.NewKey(t), keyringtest.NewKey(t)
	good := keyringtest.Sign(root, keyringtest.Doc{Serial: 4, Keys: []keyringtest.DocKey{{Key: k.Text}}}.JSON(t))
	selfSigned := keyringtest.Sign(k, keyringtest.Doc{Serial: 4, Keys: []keyringtest.DocKey{{Key: k.Text}}}.JSON(t))
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no signature", map[string]string{KeyringFile: string(good.Keyring)}, KeyringFile + ": has no signature: sign it with a root key"},
		{"a signature alone", map[string]string{KeyringSignatureFile: good.Signature}, KeyringSignatureFile + ": signs no keyring"},
		{"not a keyring", map[string]string{KeyringFile: `{"serial": 0, "keys": [], "revoked": []}`, KeyringSignatureFile: good.Signature},
			KeyringFile + ": malformed keyring: serial: must be 1 or more"},
		{"a bad key", map[string]string{KeyringFile: `{"serial": 2, "keys": [{"key": "RWx"}], "revoked": []}`, KeyringSignatureFile: good.Signature},
			"keys[0].key: not a minisign public key"},
		{"not a signature", map[string]string{KeyringFile: string(good.Keyring), KeyringSignatureFile: "signed, trust me\n"},
			KeyringSignatureFile + ": malformed keyring: signature"},
		{"signed by a key it trusts", map[string]string{KeyringFile: string(selfSigned.Keyring), KeyringSignatureFile: selfSigned.Signature},
			fmt.Sprintf("signed by key ID %016X, which the keyring itself trusts (keys[0])", k.Public.ID())},
		{"too large", map[string]string{KeyringFile: `{"serial": 2, "keys": [], "revoked": [], "x": "` + strings.Repeat("a", 70_000) + `"}`, KeyringSignatureFile: good.Signature},
			"at most 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			_, err := loadWithin(t, dir)
			wantProblem(t, err, tc.want)
		})
	}
	// A keyring that leaves the estate through a link is refused like any file.
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "keyring.json")
	os.WriteFile(outside, good.Keyring, 0o644)
	writeTree(t, dir, map[string]string{KeyringSignatureFile: good.Signature})
	os.Symlink(outside, filepath.Join(dir, KeyringFile))
	_, err := loadWithin(t, dir)
	wantProblem(t, err, KeyringFile)
}
