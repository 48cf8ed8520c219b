package blueprint

import "fmt"

// Finding kinds (and KindVariable, see variables.go).
const (
	KindReference    = "reference"
	KindOrdering     = "ordering"
	KindLibraryDrift = "library_drift"
)

// Finding is a problem that crosses object boundaries. Findings never block
// the load; each routes to the owner of the Blueprint it is about and names
// the lane (a signal lane, "extensions" or "satisfies") so the fix is an
// edit to one list.
type Finding struct {
	Kind      string `json:"kind"`
	Blueprint string `json:"blueprint"`
	Lane      string `json:"lane"`
	Owner     string `json:"owner"`
	Message   string `json:"message"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s [%s] (owner %s): %s", f.Kind, f.Blueprint, f.Lane, f.Owner, f.Message)
}
