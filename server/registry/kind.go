package registry

import (
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/attributes"
)

// Kind is what the server recognises an agent as (the rules of "Kinds of agents").
type Kind string

const (
	KindUpdater   Kind = "updater"
	KindBridge    Kind = "bridge"
	KindCollector Kind = "collector"
	KindUnknown   Kind = "unknown"
)

// kindCode is a Kind as an agent's record holds it: one byte instead of
// a string's two words, for every agent of the estate.
type kindCode uint8

// kindsByCode are the kinds by code; a kind this binary does not know (a
// row written by another version) is held as KindUnknown.
var kindsByCode = [...]Kind{KindUnknown, KindUpdater, KindBridge, KindCollector}

func codeOf(k Kind) kindCode {
	for i, known := range kindsByCode {
		if known == k {
			return kindCode(i)
		}
	}
	return 0
}

// Kind is the kind c stands for.
func (c kindCode) Kind() Kind { return kindsByCode[c] }

// Recognition keys.
const (
	UpdaterServiceName = "myriarch-updater"
	BridgeServiceName  = "io.opentelemetry.operator-opamp-bridge"
	BridgeModeAttr     = "opentelemetry.io/opamp.bridge.mode"
)

// Classify applies the kind rules in their fixed order: updater, bridge,
// collector, unknown.
func Classify(identifying, nonIdentifying attributes.Part, caps uint64) Kind {
	name := identifying.Value("service.name")
	_, bridgeAttrI := identifying.Get(BridgeModeAttr)
	_, bridgeAttrN := nonIdentifying.Get(BridgeModeAttr)
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
