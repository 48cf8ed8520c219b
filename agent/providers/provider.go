package providers

import (
	"context"

	"github.com/myriarch/myriarch/internal/vars"
)

// ContextProvider supplies one object, placed under its name in the context
// (the agent provider's {"id": …} is read as ${agent.id}).
//
// Run publishes the current data by calling set (each call replaces the
// previous data; the map must not be modified afterwards) and keeps it
// current until ctx ends, then returns nil. Any other return — an error or a
// premature nil — is a failure: the Manager keeps the last published data and
// restarts Run with backoff. set blocks until the Manager has taken the data.
type ContextProvider interface {
	Name() string
	Run(ctx context.Context, set func(map[string]any)) error
}

// DynamicProvider supplies any number of mappings; inputs that reference the
// provider are rendered once per mapping.
//
// Run publishes the complete current list by calling set (each call replaces
// the previous list; mapping ids must be unique within the list; the Manager
// fills Provider and Priority) and keeps it current until ctx ends, then
// returns nil. Failures are handled as for ContextProvider.
type DynamicProvider interface {
	Name() string
	Run(ctx context.Context, set func([]vars.Mapping)) error
}

// Snapshot is the complete provider data at one moment: what the engine
// needs to render (see Data) and what `inspect --providers` prints. Its JSON
// form is {"context": {…}, "mappings": […]}, the shapes `telecraft vars`
// reads with --context and --dynamic.
type Snapshot struct {
	Context  map[string]any `json:"context"`
	Mappings []vars.Mapping `json:"mappings"`
}

// Data prepares the snapshot for rendering.
func (s Snapshot) Data() (*vars.Data, error) { return vars.NewData(s.Context, s.Mappings) }

// Priorities order the mappings of different dynamic providers (lower first).
const (
	PriorityLocalDynamic = 0
	PriorityDocker       = 50
)
