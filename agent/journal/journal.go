package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Record is the persisted state of one install transaction.
type Record struct {
	// ID distinguishes transactions (for logs and status correlation).
	ID string `json:"id"`
	// Kind names the install back-end: "collector" (binary), "container"
	// or "self" (the updater itself).
	Kind    string `json:"kind"`
	Package string `json:"package"`
	Version string `json:"version"`
	// Hash is the offered content hash, hex: the artifact's identity
	// (quarantine, staging names, verification).
	Hash string `json:"hash"`
	// OfferHash is the offer's PackageAvailable.hash, hex: what statuses
	// report as server_offered_hash. Empty in records written before it
	// existed and when the server sent no hash; see StatusHash.
	OfferHash string `json:"offer_hash,omitempty"`
	// Step is the last step completed (the install package names them).
	Step string `json:"step"`
	// PrevDir and NewDir are what ran before and what replaces it: version
	// directory names under <root>/versions (PrevDir is what <root>/current
	// pointed at before the switch), or container IDs.
	PrevDir string `json:"prev_dir,omitempty"`
	NewDir  string `json:"new_dir,omitempty"`
	// PrevVersion and PrevHash describe what was running before.
	PrevVersion string `json:"prev_version,omitempty"`
	PrevHash    string `json:"prev_hash,omitempty"`
	// Reason is why a rollback started.
	Reason    string    `json:"reason,omitempty"`
	Started   time.Time `json:"started"`
	Updated   time.Time `json:"updated"`
	StepTrail []string  `json:"step_trail,omitempty"`
}

// StatusHash is the hex hash a PackageStatus about r reports as
// server_offered_hash: the offer's hash, or the content hash when the
// record has none (written by an older updater, or the server sent no
// hash), which the server also accepts together with the version.
func (r *Record) StatusHash() string {
	if r.OfferHash != "" {
		return r.OfferHash
	}
	return r.Hash
}

// File is the journal's name in its directory (state_dir).
const File = "install-journal.json"

// Journal stores at most one unfinished transaction in one file.
type Journal struct {
	path string
}

// Open returns the journal kept in dir (created 0700 if needed).
func Open(dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Journal{path: filepath.Join(dir, File)}, nil
}

// Path is the journal file.
func (j *Journal) Path() string { return j.path }

// Load returns the unfinished transaction, or nil when there is none.
func (j *Journal) Load() (*Record, error) {
	data, err := ReadFile(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: read %s: %w", j.path, err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("journal: %s is corrupt: %w", j.path, err)
	}
	return &r, nil
}

// Save durably records r with step as its last completed step.
func (j *Journal) Save(r *Record, step string) error {
	r.Step = step
	r.Updated = time.Now().UTC()
	r.StepTrail = append(r.StepTrail, step)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("journal: encode: %w", err)
	}
	return WriteFile(j.path, append(data, '\n'), 0o600)
}

// Clear durably ends the transaction.
func (j *Journal) Clear() error { return Remove(j.path) }
