package install

import "time"

// SelfUpdateMarkerFile is, under state_dir, the marker of an applied self-update
// that the new binary has not confirmed yet (agent/install/selfupdate writes
// it, ReadStatus reads it).
const SelfUpdateMarkerFile = "selfupdate/pending.json"

// SelfUpdatePending is the content of SelfUpdateMarkerFile: an applied, not
// yet confirmed self-update.
type SelfUpdatePending struct {
	From string `json:"from"`
	To   string `json:"to"`
	Hash string `json:"hash"` // hex SHA-256 of the new binary artifact
	// OfferHash is the offer's PackageAvailable.hash (hex), reported as
	// server_offered_hash; "" in markers written before it existed.
	OfferHash string `json:"offer_hash,omitempty"`
	// Starts counts the starts of the new binary while it is judged.
	Starts     int       `json:"starts,omitempty"`
	Executable string    `json:"executable"`
	Backup     string    `json:"backup"`
	Applied    time.Time `json:"applied"`
	// Helper is the Sigstore verifier beside the executable when the
	// update replaces it too, HelperBackup where the old one is kept (""
	// when there was none: a rollback removes the new one).
	Helper       string `json:"helper,omitempty"`
	HelperBackup string `json:"helper_backup,omitempty"`
}

// StatusHash is the hex server_offered_hash of a status about p: the offer
// hash, or the content hash when the marker has none (the server also
// accepts it together with the version).
func (p *SelfUpdatePending) StatusHash() string {
	if p.OfferHash != "" {
		return p.OfferHash
	}
	return p.Hash
}
