package store

import "context"

// Snapshotter is a store's optional capability to copy its data while it
// is in use, consistent as of one moment, for `myriarchd backup`.
type Snapshotter interface {
	// Snapshot writes the store's data as files into the empty directory
	// dir and says what it wrote.
	Snapshot(ctx context.Context, dir string) (SnapshotInfo, error)
}

// SnapshotInfo describes a snapshot: which backend wrote it, the schema
// version of its data, and its files in the order they are restored.
type SnapshotInfo struct {
	Backend       string   `json:"backend"` // sqlite | postgres
	SchemaVersion int      `json:"schemaVersion"`
	Files         []string `json:"files"`
}

// ErrNotEmpty: a restore's target store already holds data.
var ErrNotEmpty = errNotEmpty{}

type errNotEmpty struct{}

func (errNotEmpty) Error() string { return "the store is not empty" }
