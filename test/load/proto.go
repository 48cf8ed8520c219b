//go:build linux

package main

import (
	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// Capability sets announced by the simulated agents, as the real programs do.
const (
	collectorCaps = protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
		protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat
	updaterCaps = protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
		protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat
)

func kv(k, v string) *protobufs.KeyValue {
	return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
}

// description is what the upstream Supervisor (collector) or
// myriarch-updater report: identifying service.*, non-identifying host and
// site attributes; the updater names its collector's instance UID.
func (a *agent) description() *protobufs.AgentDescription {
	nonID := []*protobufs.KeyValue{
		kv("host.name", a.host), kv("os.type", "linux"), kv("host.arch", "amd64"),
		kv("os.description", "Debian GNU/Linux 13 (trixie)"),
	}
	if a.updater {
		nonID = append(nonID, kv("dev.myriarch.collector.instance_uid", a.peer.uid.String()),
			kv("dev.myriarch.install.mode", "binary"))
		return &protobufs.AgentDescription{
			IdentifyingAttributes: []*protobufs.KeyValue{
				kv("service.name", "myriarch-updater"), kv("service.version", "0.1.0"),
				kv("service.instance.id", a.uid.String()),
			},
			NonIdentifyingAttributes: nonID,
		}
	}
	nonID = append(nonID, kv("site.type", "edge"), kv("site.name", a.site), kv("site.region", a.region))
	return &protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{
			kv("service.name", "otelcol-contrib"), kv("service.version", a.version),
			kv("service.instance.id", a.uid.String()),
		},
		NonIdentifyingAttributes: nonID,
	}
}

func (a *agent) caps() uint64 {
	if a.updater {
		return uint64(updaterCaps)
	}
	return uint64(collectorCaps)
}

// fullState is the message an opamp-go client sends when the server asks for
// ReportFullState: description, capabilities, health and (updaters) package statuses.
func (a *agent) fullState() *protobufs.AgentToServer {
	m := &protobufs.AgentToServer{
		InstanceUid:      a.uid[:],
		Capabilities:     a.caps(),
		AgentDescription: a.description(),
		Health:           &protobufs.ComponentHealth{Healthy: true, Status: "StatusOK", StartTimeUnixNano: uint64(a.started.UnixNano())},
	}
	if a.updater && a.pkgStatus != nil {
		m.PackageStatuses = a.pkgStatus
	}
	return m
}

// compact is a heartbeat or the first message after a reconnect: status
// compression leaves everything unchanged out.
func (a *agent) compact() *protobufs.AgentToServer {
	return &protobufs.AgentToServer{InstanceUid: a.uid[:], Capabilities: a.caps()}
}

func uidFor(run uint64, i int) uuid.UUID {
	var u uuid.UUID
	for b := 0; b < 6; b++ {
		u[b] = byte(run >> (8 * b))
	}
	for b := 0; b < 6; b++ {
		u[15-b] = byte(uint64(i) >> (8 * b))
	}
	u[6] = 0x40 // a well-formed v4 UUID; the agent index lives in bytes 10–15
	u[8] = 0x80
	return u
}
