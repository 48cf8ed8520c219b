package store

import "context"

// ConfigBatch is one write of the configuration engine: assignment records
// to upsert (JSON owned by the engine), bodies to add (by their hash, each
// stored once however many agents share it) and bodies no agent refers to
// any more.
type ConfigBatch struct {
	Assignments  map[[16]byte][]byte
	Bodies       map[string][]byte
	DeleteBodies []string
}

// Configs persists rendered configurations and who is assigned which.
type Configs interface {
	// LoadConfigs returns every assignment record and every stored body.
	LoadConfigs(ctx context.Context) (assignments map[[16]byte][]byte, bodies map[string][]byte, err error)
	// WriteConfigs applies one batch atomically.
	WriteConfigs(ctx context.Context, b ConfigBatch) error
}
