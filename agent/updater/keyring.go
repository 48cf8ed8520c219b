package updater

import (
	"github.com/open-telemetry/opamp-go/client/types"

	"github.com/myriarch/myriarch/agent/keyring"
	ikeyring "github.com/myriarch/myriarch/internal/keyring"
)

// WithKeyring makes the updater take the signed keyrings the server offers
// into r (trust.root_keys), and report the serial in force and any
// refusal as dev.myriarch.keyring.* attributes.
func WithKeyring(r *keyring.Ring) Option {
	return func(o *options) { o.keyring = r }
}

// applyKeyring takes a keyring the server sent.
func (u *Updater) applyKeyring(msg *types.MessageData) {
	cm := msg.CustomMessage
	r := u.opts.keyring
	if cm == nil || cm.GetCapability() != ikeyring.Capability || r == nil {
		return
	}
	if cm.GetType() != ikeyring.MessageType {
		u.log.Warn("unknown keyring message type from the server", "type", cm.GetType())
		return
	}
	serial, err := r.Apply(cm.GetData())
	if err != nil {
		u.log.Error("keyring offered by the server refused; the one in force stays", "serial", serial, "err", err)
	} else {
		u.log.Info("keyring in force", "serial", serial)
	}
	u.updateFacts(func(f *facts) { f.keyring = r.Attributes() })
}

// customCapabilities are what the updater announces: providers snapshots
// when its providers run, keyrings when a root key is pinned.
func (u *Updater) customCapabilities(hp *hostProviders) []string {
	var caps []string
	if hp.rep != nil {
		caps = append(caps, providerCapability)
	}
	if u.opts.keyring != nil {
		caps = append(caps, ikeyring.Capability)
	}
	return caps
}
