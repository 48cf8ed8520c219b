package registry

import "github.com/open-telemetry/opamp-go/protobufs"

// Kind is what the server recognises an agent as (seed 003, "Kinds of agents").
type Kind string

const (
	KindUpdater   Kind = "updater"
	KindBridge    Kind = "bridge"
	KindCollector Kind = "collector"
	KindUnknown   Kind = "unknown"
)

// Recognition keys.
const (
	UpdaterServiceName = "myriarch-updater"
	BridgeServiceName  = "io.opentelemetry.operator-opamp-bridge"
	BridgeModeAttr     = "opentelemetry.io/opamp.bridge.mode"
)

// Classify applies the kind rules in their fixed order: updater, bridge,
// collector, unknown.
func Classify(identifying, nonIdentifying map[string]string, caps uint64) Kind {
	name := identifying["service.name"]
	_, bridgeAttrI := identifying[BridgeModeAttr]
	_, bridgeAttrN := nonIdentifying[BridgeModeAttr]
	switch {
	case name == UpdaterServiceName:
		return KindUpdater
	case name == BridgeServiceName || bridgeAttrI || bridgeAttrN:
		return KindBridge
	case caps&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig) != 0:
		return KindCollector
	default:
		return KindUnknown
	}
}
