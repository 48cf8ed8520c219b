// Package sigstoreroot holds the trusted root of the Sigstore public-good
// instance (Fulcio's certificate authorities, Rekor's and the CT logs'
// keys, the timestamp authorities), as sigstore-go publishes it, so that
// the updater verifies upstream releases with no network call. A site on
// a private Sigstore instance, or one refreshing the root, names its own
// trusted_root.json in trust.sigstore.trusted_root_file.
package sigstoreroot

import _ "embed"

// PublicGood is the public-good instance's trusted_root.json.
//
//go:embed trusted_root.json
var PublicGood []byte
