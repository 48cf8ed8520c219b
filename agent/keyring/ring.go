// Package keyring keeps the host's signed keyring (internal/keyring): the
// keyring a root key pinned in trust.root_keys signed, as the server last
// offered it, stored in state_dir so it holds across restarts. It adds its
// keys to the pinned minisign keys and marks its revoked keys, pinned ones
// included, for every verification (install.KeySource).
//
// A keyring is taken only when a pinned root signed it and its serial is
// above the one in force; an older or equal one (a server replaying an
// earlier keyring to bring a revoked key back) is refused. The keyring in
// state_dir is verified again at each start: if it no longer verifies,
// every minisign-signed install is refused until the server offers a good
// one, rather than forgetting its revocations.
package keyring

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/statefile"
	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/internal/keyring"
)

// File is the keyring's file in state_dir.
const File = "keyring.json"

// ErrOutOfOrder: a keyring's serial is not above the one in force.
var ErrOutOfOrder = errors.New("keyring is not newer than the one in force")

// Ring is the host's keyring. Safe for concurrent use.
type Ring struct {
	path  string
	roots []minisign.PublicKey

	mu      sync.Mutex
	doc     *keyring.Document // guarded by mu; nil while none is in force
	broken  error             // guarded by mu: the stored keyring no longer verifies
	refused string            // guarded by mu: why the last offered keyring was refused
}

var _ install.KeySource = (*Ring)(nil)

// Open reads the keyring kept in stateDir, if any, checking it against
// roots (trust.root_keys). A kept keyring that does not verify is not an
// error here: Keys refuses with it until a good keyring is applied.
func Open(stateDir string, roots []string) (*Ring, error) {
	rs, err := keyring.ParseRoots("trust.root_keys", roots)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, errors.New("keyring: no root key (trust.root_keys)")
	}
	r := &Ring{path: filepath.Join(stateDir, File), roots: rs}
	var s keyring.Signed
	ok, err := statefile.Read(r.path, &s)
	switch {
	case err != nil:
		r.broken = fmt.Errorf("the keyring kept in %s cannot be read, so its revocations cannot be honoured: %w", r.path, err)
	case ok:
		d, err := keyring.Verify(s.Keyring, []byte(s.Signature), rs)
		if err != nil {
			r.broken = fmt.Errorf("the keyring kept in %s no longer verifies, so its revocations cannot be honoured: %w", r.path, err)
		}
		r.doc = d
	}
	return r, nil
}

// Apply takes a keyring offered by the server (a custom message's data):
// it must verify against a pinned root and be newer than the one in force.
// It is stored before it is in force. It returns the serial in force
// afterwards; an error says why the offer was refused, and Attributes
// reports it after the keyring's ID (keyring.ID) and a colon.
func (r *Ring) Apply(data []byte) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := keyring.Decode(data)
	id := keyring.ID(data)
	if err == nil {
		id = keyring.ID(s.Keyring)
		err = r.applyLocked(s)
	}
	r.refused = ""
	if err != nil {
		r.refused = id + ": " + err.Error()
	}
	return r.serialLocked(), err
}

func (r *Ring) applyLocked(s keyring.Signed) error {
	d, err := keyring.Verify(s.Keyring, []byte(s.Signature), r.roots)
	if err != nil {
		return err
	}
	if cur := r.serialLocked(); d.Serial <= cur && r.broken == nil {
		return fmt.Errorf("%w: serial %d offered, %d in force", ErrOutOfOrder, d.Serial, cur)
	}
	if err := statefile.Write(r.path, s); err != nil {
		return fmt.Errorf("keyring: keep serial %d: %w", d.Serial, err)
	}
	r.doc, r.broken = d, nil
	return nil
}

func (r *Ring) serialLocked() uint64 {
	if r.doc == nil {
		return 0
	}
	return r.doc.Serial
}

// Serial is the serial of the keyring in force (0: none).
func (r *Ring) Serial() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.serialLocked()
}

// Keys implements install.KeySource: pinned, then the keyring's keys, each
// key the keyring revokes marked so (pinned ones too).
func (r *Ring) Keys(pinned []verify.Key) ([]verify.Key, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken != nil {
		return nil, r.broken
	}
	if r.doc == nil {
		return pinned, nil
	}
	out := make([]verify.Key, 0, len(pinned)+len(r.doc.Keys))
	out = append(out, pinned...)
	for _, k := range r.doc.Keys {
		out = append(out, verify.Key{PublicKey: k.Public(), NotBefore: k.NotBefore, NotAfter: k.NotAfter})
	}
	for i := range out {
		if why, ok := r.doc.RevokedReason(out[i].ID()); ok {
			out[i].Revoked = why
		}
	}
	// A revoked key listed nowhere else still says why it is refused.
	for _, rv := range r.doc.Revoked {
		why, _ := r.doc.RevokedReason(rv.ID())
		out = append(out, verify.RevokedKey(rv.ID(), why))
	}
	return out, nil
}

// Attributes are what the updater reports of its keyring
// (keyring.AttrSerial, and keyring.AttrRefused after a refusal or while
// the kept keyring does not verify).
func (r *Ring) Attributes() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{keyring.AttrSerial: strconv.FormatUint(r.serialLocked(), 10)}
	why := r.refused
	if why == "" && r.broken != nil {
		why = r.broken.Error()
	}
	if why != "" {
		if len(why) > keyring.MaxRefused {
			why = why[:keyring.MaxRefused-3] + "..."
		}
		out[keyring.AttrRefused] = why
	}
	return out
}
