package opampsrv

import (
	"slices"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// Announce adds a custom capability to what resp announces: each hook
// that serves one announces it, none replaces another's.
func Announce(resp *protobufs.ServerToAgent, capability string) {
	if resp.CustomCapabilities == nil {
		resp.CustomCapabilities = &protobufs.CustomCapabilities{}
	}
	if !slices.Contains(resp.CustomCapabilities.Capabilities, capability) {
		resp.CustomCapabilities.Capabilities = append(resp.CustomCapabilities.Capabilities, capability)
	}
}
