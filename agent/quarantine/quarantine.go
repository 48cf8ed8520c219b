// Package quarantine remembers, durably, the content hashes whose install
// failed, so an install engine does not retry a bad artifact forever.
//
// Artifact faults (hash, signature, unpack, version check, health) block the
// hash until the server offers a different one; transient faults (network,
// registry, disk) only delay a retry, with a backoff that doubles per
// failure up to an hour. Both install engines (binary and container mode)
// share this logic; each keeps its own file so the modes never mix state.
package quarantine

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/myriarch/myriarch/agent/statefile"
)

// MaxEntries bounds the file: beyond it the oldest failures are forgotten.
const MaxEntries = 100

// maxBackoff caps the wait before a transiently failed hash may be retried.
const maxBackoff = time.Hour

// Entry is one failed hash. The JSON form is the file format: existing
// files must keep loading, so fields are only ever added.
type Entry struct {
	Version    string    `json:"version"`
	Reason     string    `json:"reason"`
	Failed     time.Time `json:"failed"`
	Transient  bool      `json:"transient,omitempty"`
	RetryAfter time.Time `json:"retry_after,omitzero"`
	Count      int       `json:"count"`
}

// Store is the quarantine file at one path. It holds no state in memory:
// every call reads the file, so a Store is cheap to build per use.
type Store struct {
	path    string
	backoff time.Duration
	log     *slog.Logger
}

// New returns the store kept in the file at path. backoff is the first wait
// after a transient failure; log (nil: discard) receives warnings about an
// unreadable file, which is never fatal.
func New(path string, backoff time.Duration, log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{path: path, backoff: backoff, log: log}
}

// Load returns the entries by hex content hash (empty when there is no file).
func (s *Store) Load() (map[string]Entry, error) {
	q := map[string]Entry{}
	if _, err := statefile.Read(s.path, &q); err != nil {
		return map[string]Entry{}, fmt.Errorf("quarantine: %w", err)
	}
	return q, nil
}

// Record remembers that hash (version ver) failed for reason. An unreadable
// file is replaced, not an error: losing old entries only costs retries.
func (s *Store) Record(hash, ver, reason string, transient bool) error {
	q, err := s.Load()
	if err != nil {
		s.log.Warn("quarantine file unreadable, starting a new one", "err", err)
		q = map[string]Entry{}
	}
	ent := q[hash]
	ent.Version, ent.Reason, ent.Failed, ent.Transient = ver, reason, time.Now().UTC(), transient
	ent.Count++
	ent.RetryAfter = time.Time{}
	if transient {
		wait := s.backoff
		for i := 1; i < ent.Count && wait < maxBackoff; i++ {
			wait *= 2
		}
		ent.RetryAfter = ent.Failed.Add(min(wait, maxBackoff))
	}
	q[hash] = ent
	for len(q) > MaxEntries {
		var oldest string
		for h, v := range q {
			if oldest == "" || v.Failed.Before(q[oldest].Failed) {
				oldest = h
			}
		}
		delete(q, oldest)
	}
	return statefile.Write(s.path, q)
}

// ErrPreviouslyFailed wraps every refusal by Check.
var ErrPreviouslyFailed = errors.New("previously failed")

// Check returns an error wrapping ErrPreviouslyFailed when hash failed
// before and may not be tried (yet), nil otherwise. An unreadable file
// allows the hash (and is logged): a lost quarantine only costs a retry.
func (s *Store) Check(hash string) error {
	q, err := s.Load()
	if err != nil {
		s.log.Warn("quarantine unreadable", "err", err)
		return nil
	}
	ent, ok := q[hash]
	if !ok {
		return nil
	}
	if !ent.Transient {
		return fmt.Errorf("%w: version %s with this hash failed at %s (%s); offer a different hash",
			ErrPreviouslyFailed, ent.Version, ent.Failed.Format(time.RFC3339), ent.Reason)
	}
	if time.Now().Before(ent.RetryAfter) {
		return fmt.Errorf("%w: version %s failed at %s (%s); next attempt allowed after %s",
			ErrPreviouslyFailed, ent.Version, ent.Failed.Format(time.RFC3339), ent.Reason, ent.RetryAfter.Format(time.RFC3339))
	}
	return nil
}
