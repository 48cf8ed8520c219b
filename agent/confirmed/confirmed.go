// Package confirmed remembers, durably, the versions of each package that
// this host ran and confirmed healthy (they passed the install engine's
// health gate), so that going back to one of them is not a downgrade the
// local policy has to allow (agent/admission). Both install engines
// (binary and container mode) keep their own file, like the quarantine.
package confirmed

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/myriarch/myriarch/agent/statefile"
)

// File is the name of the record under state_dir (after the engine's
// state prefix).
const File = "confirmed-versions.json"

// MaxPerPackage bounds the record: beyond it the versions confirmed
// longest ago are forgotten.
const MaxPerPackage = 32

// Entry is one confirmed version. The JSON form is the file format:
// existing files must keep loading, so fields are only ever added.
type Entry struct {
	Version string `json:"version"`
	// Hash is the content hash (hex) it was installed from, "" when it was
	// found running, not installed by the updater.
	Hash      string    `json:"hash,omitempty"`
	Confirmed time.Time `json:"confirmed"`
}

// Store is the record at one path. It holds no state in memory: every call
// reads the file, so a Store is cheap to build per use.
type Store struct {
	path string
	log  *slog.Logger
}

// New returns the store kept in the file at path; log (nil: discard)
// receives warnings about an unreadable file, which is never fatal.
func New(path string, log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{path: path, log: log}
}

// Load returns the entries by package, oldest confirmation first (empty
// when there is no file).
func (s *Store) Load() (map[string][]Entry, error) {
	r := map[string][]Entry{}
	if _, err := statefile.Read(s.path, &r); err != nil {
		return map[string][]Entry{}, fmt.Errorf("confirmed versions: %w", err)
	}
	return r, nil
}

// Record remembers that version ver of pkg (from content hash, "" when
// unknown) was confirmed healthy now. A version confirmed again moves to
// the end; past MaxPerPackage the oldest go. An unreadable file is
// replaced: losing it only costs a downgrade that trust.allow_downgrade
// must then allow.
func (s *Store) Record(pkg, ver, hash string) error {
	r, err := s.Load()
	if err != nil {
		s.log.Warn("confirmed versions unreadable, starting a new record", "err", err)
		r = map[string][]Entry{}
	}
	list := slices.DeleteFunc(r[pkg], func(e Entry) bool { return sameName(e.Version, ver) })
	list = append(list, Entry{Version: ver, Hash: hash, Confirmed: time.Now().UTC()})
	if len(list) > MaxPerPackage {
		list = list[len(list)-MaxPerPackage:]
	}
	r[pkg] = list
	return statefile.Write(s.path, r)
}

// Versions returns the versions of pkg this host confirmed, oldest
// confirmation first. An unreadable record counts as empty (and is
// logged): it can only make a downgrade need trust.allow_downgrade.
func (s *Store) Versions(pkg string) []string {
	r, err := s.Load()
	if err != nil {
		s.log.Warn("confirmed versions unreadable; no version counts as confirmed", "err", err)
		return nil
	}
	var out []string
	for _, e := range r[pkg] {
		out = append(out, e.Version)
	}
	return out
}

// Has reports whether ver of pkg is recorded (spelled the same, a leading
// v aside).
func (s *Store) Has(pkg, ver string) bool {
	return slices.ContainsFunc(s.Versions(pkg), func(v string) bool { return sameName(v, ver) })
}

func sameName(a, b string) bool { return strings.TrimPrefix(a, "v") == strings.TrimPrefix(b, "v") }
