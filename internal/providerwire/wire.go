// Package providerwire is the custom OpAMP message in which a
// myriarch-updater reports its host's variable-substitution providers to myriarchd:
// capability Capability, type MessageType, data a JSON Snapshot. The
// updater encodes it within the bounds below and myriarchd enforces them.
package providerwire

import "github.com/myriarch/myriarch/internal/attributes"

// Capability and MessageType name the message.
const (
	Capability  = "dev.myriarch.providers"
	MessageType = "snapshot"
)

// Bounds of one snapshot.
const (
	// MaxBytes is the most bytes of JSON one snapshot may have.
	MaxBytes = 1 << 20
	// MaxMappings is the most mappings per dynamic provider.
	MaxMappings = 1000
	// MaxKeys is the most variables per context provider or mapping
	// (flattened), like an attribute list.
	MaxKeys = attributes.MaxPerList
	// MaxLen is the most bytes of a key or a value, like an attribute.
	MaxLen = attributes.MaxLen
	// MaxProcessors is the most processors per mapping.
	MaxProcessors = 8
	// MaxContextProviders and MaxDynamicProviders are the most providers
	// of each kind one snapshot may name (myriarch-updater has four
	// context providers and two dynamic ones).
	MaxContextProviders = 16
	MaxDynamicProviders = 8
	// MaxVarDepth is the deepest an object or list may nest within a
	// provider's object or a mapping (see MaxDepth): deeper ones are sent
	// as their JSON text.
	MaxVarDepth = 8
	// MaxStored is the most bytes of variables (names and values, as JSON,
	// and a small overhead each), mapping ids and processor configuration
	// myriarchd keeps of one snapshot; what is beyond it is cut, whole
	// mappings at a time, and counted.
	MaxStored = 64 << 10
)

// Snapshot is the JSON document: the context providers' objects by
// provider name, each dynamic provider's mappings, the sender's sequence
// number (new per connection; it orders nothing on the server) and what
// the sender cut to stay within the bounds, counted by what.
type Snapshot struct {
	Context   map[string]map[string]any `json:"context"`
	Dynamic   map[string][]Mapping      `json:"dynamic"`
	Seq       uint64                    `json:"seq"`
	Truncated map[string]int            `json:"truncated,omitempty"`
}

// Mapping is one mapping of a dynamic provider: its id, its variables
// (an object under the provider's name) and the processors that apply to
// what a receiver rendered for it collects.
type Mapping struct {
	ID         string         `json:"id"`
	Mapping    map[string]any `json:"mapping"`
	Processors any            `json:"processors,omitempty"`
}
