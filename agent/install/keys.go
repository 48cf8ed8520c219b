package install

import "github.com/myriarch/myriarch/agent/verify"

// KeySource gives the minisign keys in force (agent/keyring.Ring): pinned
// with what the host's signed keyring adds and revokes. Keys is called at
// each verification, from the engine's worker; an error (a stored keyring
// that no longer verifies) refuses the artifact with it.
type KeySource interface {
	Keys(pinned []verify.Key) ([]verify.Key, error)
}

// checksMinisign reports whether a minisign signature is checked: a key is
// pinned, or a keyring may bring some.
func (e *Engine) checksMinisign() bool { return len(e.keys) > 0 || e.o.Keyring != nil }

// minisignKeys are the keys a minisign signature is checked against now.
func (e *Engine) minisignKeys() ([]verify.Key, error) {
	if e.o.Keyring == nil {
		return e.keys, nil
	}
	return e.o.Keyring.Keys(e.keys)
}
