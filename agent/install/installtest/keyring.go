package installtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aead.dev/minisign"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/keyring"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
)

// keyringOf gives the engine a host keyring (agent/keyring) kept in a
// directory of its own, signed by a root the host pins, that either brings
// the site's signing keys (which are then no longer pinned) or revokes
// them; broken makes the kept keyring fail its check at the next open.
func keyringOf(t testing.TB, revoke, broken bool) func(o *install.Options) {
	root := keyringtest.NewKey(t)
	dir := t.TempDir()
	return func(o *install.Options) {
		doc := keyringtest.Doc{Serial: 7}
		for _, text := range o.MinisignPublicKeys {
			var pk minisign.PublicKey
			if err := pk.UnmarshalText([]byte(strings.TrimSpace(text))); err != nil {
				panic(err)
			}
			if revoke {
				doc.Revoked = append(doc.Revoked, keyringtest.DocRevoked{KeyID: fmt.Sprintf("%016X", pk.ID()), Reason: "rotated out"})
			} else {
				doc.Keys = append(doc.Keys, keyringtest.DocKey{Key: pk.String()})
			}
		}
		if !revoke {
			o.MinisignPublicKeys = nil
		}
		ring, err := keyring.Open(dir, []string{root.Text})
		if err == nil {
			_, err = ring.Apply(keyringtest.Sign(root, doc.JSON(t)).Encode())
		}
		if err == nil && broken {
			path := filepath.Join(dir, keyring.File)
			var data []byte
			if data, err = os.ReadFile(path); err == nil {
				err = os.WriteFile(path, []byte(strings.Replace(string(data), `"signature": "`, `"signature": "x`, 1)), 0o600)
			}
			if err == nil {
				ring, err = keyring.Open(dir, []string{root.Text})
			}
		}
		if err != nil {
			panic(err)
		}
		o.Keyring = ring
	}
}

// keyringBadOffers are the offers every back-end refuses because of the
// host's keyring: a version signed by a key it revokes (pinned though the
// key is), and any version while the kept keyring fails its check (its
// revocations cannot be honoured; a host fault, never quarantined).
func keyringBadOffers(t testing.TB, f *Fixture) []BadOffer {
	signed := func(path string) func(t testing.TB, s Site) *protobufs.PackagesAvailable {
		return func(t testing.TB, s Site) *protobufs.PackagesAvailable {
			_, v := s.Versions()
			data := s.Artifact(t, v, false)
			return Offer(f.Package, f.Type, v, s.Server().Serve(path, data), data, s.Server().Sign(data))
		}
	}
	return []BadOffer{
		{Name: "keyring: signed by a revoked key", Want: "signature key is revoked: key ID", Quarantine: Blocked,
			Options: keyringOf(t, true, false), Offer: signed("/keyring-revoked")},
		{Name: "keyring: the kept keyring no longer verifies", Want: "no longer verifies, so its revocations cannot be honoured",
			Options: keyringOf(t, false, true), Offer: signed("/keyring-broken")},
	}
}

// testKeyringInstalls installs a version signed by a key no longer pinned
// on the host but brought by its signed keyring: a rotation that touched
// no host.
func testKeyringInstalls(t *testing.T, f *Fixture) {
	testInstalls(t, f, "/keyring-good", keyringOf(t, false, false), func(site Site, data []byte) []byte {
		return site.Server().Sign(data)
	})
}
