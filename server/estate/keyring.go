package estate

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/myriarch/myriarch/internal/keyring"
)

// KeyringFile and KeyringSignatureFile are the estate's signed keyring
// (internal/keyring): the minisign keys that sign its packages and the
// keys revoked, signed by a root key the updaters pin (trust.root_keys).
// myriarchd holds no root key: it checks the keyring's form and offers it
// as it is; each updater checks the signature.
const (
	KeyringFile          = "trust/keyring.json"
	KeyringSignatureFile = "trust/keyring.json.minisig"
)

// Keyring is the estate's signed keyring.
type Keyring struct {
	Doc *keyring.Document
	// Signed is what updaters are sent.
	Signed keyring.Signed
	// RootKeyID is the ID of the key that signed it.
	RootKeyID uint64
	// SHA256 identifies the signed keyring.
	SHA256 [32]byte
}

func init() { extensions = append(extensions, loadKeyring) }

// loadKeyring reads trust/keyring.json and its signature; both or neither.
func loadKeyring(ps *problems, e *Estate) {
	docPath, sigPath := filepath.Join(ps.root, KeyringFile), filepath.Join(ps.root, KeyringSignatureFile)
	doc, derr := ps.readFile(docPath)
	sig, serr := ps.readFile(sigPath)
	switch {
	case errors.Is(derr, os.ErrNotExist) && errors.Is(serr, os.ErrNotExist):
		return
	case errors.Is(serr, os.ErrNotExist):
		ps.add(docPath, 0, "has no signature: sign it with a root key the updaters pin (minisign -S -s root.key -m %s), which writes %s", KeyringFile, KeyringSignatureFile)
		return
	case errors.Is(derr, os.ErrNotExist):
		ps.add(sigPath, 0, "signs no keyring: %s is missing", KeyringFile)
		return
	case derr != nil:
		ps.add(docPath, 0, "cannot read: %v", derr)
		return
	case serr != nil:
		ps.add(sigPath, 0, "cannot read: %v", serr)
		return
	}
	d, err := keyring.Parse(doc)
	if err != nil {
		ps.add(docPath, 0, "%v", err)
	}
	id, sigErr := keyring.CheckSignature(sig)
	if sigErr != nil {
		ps.add(sigPath, 0, "%v", sigErr)
	}
	if err != nil || sigErr != nil {
		return
	}
	if where, ok := signsItself(d, id); ok {
		ps.add(sigPath, 0, "signed by key ID %016X, which the keyring itself trusts (%s): a root key signs keyrings only, never packages", id, where)
		return
	}
	e.Keyring = &Keyring{Doc: d, Signed: keyring.Signed{Keyring: doc, Signature: string(sig)}, RootKeyID: id, SHA256: sha256.Sum256(doc)}
}

// signsItself finds the keyring's signer among the keys it trusts.
func signsItself(d *keyring.Document, id uint64) (string, bool) {
	for i, k := range d.Keys {
		if k.Public().ID() == id {
			return fmt.Sprintf("keys[%d]", i), true
		}
	}
	return "", false
}
