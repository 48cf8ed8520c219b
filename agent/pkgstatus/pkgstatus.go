// Package pkgstatus keeps the OpAMP PackageStatuses an install engine
// reports: a stable order for handling an offer, the snapshot sent to the
// server, and its durable copy under state_dir (terminal statuses survive a
// restart, so the updater can report them before the next offer).
//
// Both install engines (binary and container mode) share it; each keeps its
// own file.
package pkgstatus

import (
	"errors"
	"log/slog"
	"os"
	"slices"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/agent/journal"
)

// Names returns the names of the offered packages, sorted: statuses and
// refusals then come out in the same order for the same offer.
func Names(offer *protobufs.PackagesAvailable) []string {
	names := make([]string, 0, len(offer.GetPackages()))
	for n := range offer.GetPackages() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// OfferedHash is what a status about p reports as server_offered_hash:
// PackageAvailable.hash, the spec's "hash of the package that was offered by
// the server" (not the file's content hash). When the server sent none it is
// the content hash, which myriarchd also accepts together with the version.
func OfferedHash(p *protobufs.PackageAvailable) []byte {
	if h := p.GetHash(); len(h) > 0 {
		return h
	}
	return p.GetFile().GetContentHash()
}

// Snapshot returns a deep copy of statuses as one message. A nil allHash is
// sent as an empty hash, never omitted.
func Snapshot(statuses map[string]*protobufs.PackageStatus, allHash []byte) *protobufs.PackageStatuses {
	s := &protobufs.PackageStatuses{Packages: map[string]*protobufs.PackageStatus{}, ServerProvidedAllPackagesHash: slices.Clone(allHash)}
	if s.ServerProvidedAllPackagesHash == nil {
		s.ServerProvidedAllPackagesHash = []byte{}
	}
	for n, st := range statuses {
		s.Packages[n] = proto.Clone(st).(*protobufs.PackageStatus)
	}
	return s
}

// Publish sends s and, when persist is set, saves it at path. Failures are
// logged, not returned: a status that cannot be delivered must not stop an
// install (the next status carries the whole set again).
func Publish(log *slog.Logger, s *protobufs.PackageStatuses, send func(*protobufs.PackageStatuses) error, path string, persist bool) {
	if err := send(s); err != nil {
		log.Warn("reporting package statuses failed", "err", err)
	}
	if persist {
		if err := Save(path, s); err != nil {
			log.Warn("persisting package statuses failed", "err", err)
		}
	}
}

// Save replaces the statuses saved at path (protojson, mode 0600, durable).
func Save(path string, s *protobufs.PackageStatuses) error {
	data, err := protojson.Marshal(s)
	if err != nil {
		return err
	}
	return journal.WriteFile(path, data, 0o600)
}

// CorruptError is returned by Load for a file that is not PackageStatuses.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string { return e.Path + " is corrupt: " + e.Err.Error() }
func (e *CorruptError) Unwrap() error { return e.Err }

// Load returns the statuses saved at path, nil when there are none.
func Load(path string) (*protobufs.PackageStatuses, error) {
	data, err := journal.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s protobufs.PackageStatuses
	if err := protojson.Unmarshal(data, &s); err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	return &s, nil
}
