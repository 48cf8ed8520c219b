package keyring_test

import (
	"errors"
	"strings"
	"testing"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/internal/keyring"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
)

func TestParseRefusesBadDocuments(t *testing.T) {
	a, b := keyringtest.NewKey(t), keyringtest.NewKey(t)
	big := `{"serial":1,"keys":[],"revoked":[],"x":"` + strings.Repeat("a", keyring.MaxSize) + `"}`
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"not JSON", `serial: 1`, []string{"malformed keyring", "invalid character"}},
		{"unknown field", `{"serial":1,"keys":[],"revoked":[],"expires":"x"}`, []string{`unknown field "expires"`}},
		{"two values", `{"serial":1,"keys":[],"revoked":[]} {}`, []string{"more than one JSON value"}},
		{"too large", big, []string{"at most 65536"}},
		{"no serial", `{"keys":[],"revoked":[]}`, []string{"serial: must be 1 or more"}},
		{"bad key and bad id, both named", `{"serial":2,"keys":[{"key":"RWnope"}],"revoked":[{"key_id":"XYZ"}]}`,
			[]string{"keys[0].key: not a minisign public key", `revoked[0].key_id: "XYZ" is not a minisign key ID`}},
		{"window backwards", `{"serial":2,"keys":[{"key":"` + a.Text + `","not_before":"2027-01-01T00:00:00Z","not_after":"2026-01-01T00:00:00Z"}],"revoked":[]}`,
			[]string{"keys[0].not_after: 2026-01-01T00:00:00Z is not after not_before"}},
		{"key twice", `{"serial":2,"keys":[{"key":"` + a.Text + `"},{"key":"` + a.Text + `"}],"revoked":[]}`, []string{"keys[1].key: key ID", "listed twice (also keys[0])"}},
		{"trusted and revoked", `{"serial":2,"keys":[{"key":"` + a.Text + `"}],"revoked":[{"key_id":"` + a.ID() + `"}]}`,
			[]string{"revoked[0].key_id: " + a.ID() + " is revoked and trusted (keys[0]) at once"}},
		{"revoked twice", `{"serial":2,"keys":[],"revoked":[{"key_id":"` + b.ID() + `"},{"key_id":"` + strings.ToLower(b.ID()) + `"}]}`,
			[]string{"revoked[1].key_id: " + b.ID() + " is listed twice"}},
		{"long reason", `{"serial":2,"keys":[],"revoked":[{"key_id":"` + b.ID() + `","reason":"` + strings.Repeat("r", 300) + `"}]}`,
			[]string{"revoked[0].reason: 300 bytes, at most 256"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := keyring.Parse([]byte(tc.doc))
			if !errors.Is(err, keyring.ErrMalformed) {
				t.Fatalf("err %v, want ErrMalformed", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestVerify(t *testing.T) {
	root, other, k1, k2 := keyringtest.NewKey(t), keyringtest.NewKey(t), keyringtest.NewKey(t), keyringtest.NewKey(t)
	doc := keyringtest.Doc{Serial: 3, Keys: []keyringtest.DocKey{{Key: k2.Text, NotAfter: "2030-01-01T00:00:00Z"}},
		Revoked: []keyringtest.DocRevoked{{KeyID: k1.ID(), Reason: "laptop lost"}}}.JSON(t)
	good := keyringtest.Sign(root, doc)
	roots := []minisign.PublicKey{root.Public}

	d, err := keyring.Verify(good.Keyring, []byte(good.Signature), roots)
	if err != nil {
		t.Fatal(err)
	}
	if d.Serial != 3 || len(d.Keys) != 1 || d.Keys[0].Public().ID() != k2.Public.ID() || d.Keys[0].NotAfter.Year() != 2030 {
		t.Fatalf("parsed %+v", d)
	}
	if why, ok := d.RevokedReason(k1.Public.ID()); !ok || why != "revoked by keyring serial 3: laptop lost" {
		t.Fatalf("revoked reason %q %v", why, ok)
	}
	if _, ok := d.RevokedReason(k2.Public.ID()); ok {
		t.Fatal("k2 revoked")
	}

	tampered := append([]byte{}, doc...)
	tampered[len(tampered)-3] = ' '
	byOther := keyringtest.Sign(other, doc)
	for _, tc := range []struct {
		name      string
		data, sig []byte
		roots     []minisign.PublicKey
		want      error
		says      string
	}{
		{"another root", byOther.Keyring, []byte(byOther.Signature), roots, keyring.ErrUnknownRoot, "signed by key ID " + other.ID() + ", pinned roots are " + root.ID()},
		{"no root pinned", good.Keyring, []byte(good.Signature), nil, keyring.ErrUnknownRoot, "pinned roots are none"},
		{"tampered", tampered, []byte(good.Signature), roots, keyring.ErrBadSignature, root.ID()},
		{"signature not minisign", good.Keyring, []byte("untrusted comment: x\nnope\n"), roots, keyring.ErrMalformed, "signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := keyring.Verify(tc.data, tc.sig, tc.roots)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

func TestEnvelope(t *testing.T) {
	root := keyringtest.NewKey(t)
	s := keyringtest.Sign(root, keyringtest.Doc{Serial: 1}.JSON(t))
	back, err := keyring.Decode(s.Encode())
	if err != nil || string(back.Keyring) != string(s.Keyring) || back.Signature != s.Signature {
		t.Fatalf("round trip: %v", err)
	}
	for _, bad := range []string{`{"keyring":"!!"}`, `{"keyring":"","signature":"","more":1}`, strings.Repeat(" ", 3*keyring.MaxSize)} {
		if _, err := keyring.Decode([]byte(bad)); !errors.Is(err, keyring.ErrMalformed) {
			t.Errorf("%.40q: %v", bad, err)
		}
	}
}

func TestParseRoots(t *testing.T) {
	a := keyringtest.NewKey(t)
	roots, err := keyring.ParseRoots("trust.root_keys", []string{a.Text, "nope"})
	if len(roots) != 1 || err == nil || !strings.Contains(err.Error(), "trust.root_keys[1]: not a minisign public key") {
		t.Fatalf("%d roots, %v", len(roots), err)
	}
}
