package server_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/telemetry"
)

// ownTelemetry records the own-telemetry settings an agent was offered.
type ownTelemetry struct {
	mu     sync.Mutex
	offers []*types.MessageData // guarded by mu
}

func (o *ownTelemetry) onMessage(m *types.MessageData) {
	if m.OfferedConnectionsSettingsHash == nil {
		return
	}
	o.mu.Lock()
	o.offers = append(o.offers, m)
	o.mu.Unlock()
}

func (o *ownTelemetry) last() *types.MessageData {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.offers) == 0 {
		return nil
	}
	return o.offers[len(o.offers)-1]
}

func telemetryOf(a admin.Agent) telemetry.AgentJSON {
	var out telemetry.AgentJSON
	b, _ := json.Marshal(a.Telemetry)
	json.Unmarshal(b, &out)
	return out
}

const ownCaps = protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnMetrics |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsOwnLogs |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsConnectionSettingsStatus

// A fleet's telemetry section is offered to its collectors (the signals
// each reports) and to the updaters looking after them; the agent's
// reported status is tracked by hash; removing the section takes the
// destinations back.
func TestOwnTelemetryOffered(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.0")
	est.fleet("edge", "0.149.0", "telemetry:\n  metrics: {endpoint: \"http://127.0.0.1:4318/v1/metrics\", headers: {X-Key: k1}}\n"+
		"  logs: {endpoint: \"http://127.0.0.1:4318/v1/logs\"}\n  traces: {endpoint: \"http://127.0.0.1:4318/v1/traces\"}\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	tok := ts.createToken("edge", nil)

	var col ownTelemetry
	uid := newUID(t)
	ts.connect(agentSpec{uid: uid, token: tok.Token, onMessage: col.onMessage,
		identifying:  kvs("service.name", pkgName, "service.version", "0.149.0", "service.instance.id", uid.String()),
		nonIdent:     kvs("host.name", "a", "os.type", "linux", "host.arch", "amd64", "site.type", "edge"),
		capabilities: baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig | ownCaps,
	})
	// opamp-go reports APPLYING for own-telemetry settings; the first
	// answer also carries the heartbeat, which it reports APPLIED.
	has := func(a admin.Agent) bool {
		st := telemetryOf(a).State
		return st == telemetry.StateApplying || st == telemetry.StateApplied
	}
	got := telemetryOf(ts.waitAgent(uid, "telemetry received", has))
	if got.Fleet != "edge" || strings.Join(got.Signals, ",") != "metrics,logs" || got.Sent != got.Offered || got.Reported == "" {
		t.Fatalf("telemetry %+v", got)
	}
	m := col.last()
	if m.OwnMetricsConnSettings.GetDestinationEndpoint() != "http://127.0.0.1:4318/v1/metrics" ||
		m.OwnMetricsConnSettings.GetHeaders().GetHeaders()[0].GetValue() != "k1" ||
		m.OwnLogsConnSettings.GetDestinationEndpoint() != "http://127.0.0.1:4318/v1/logs" || m.OwnTracesConnSettings != nil {
		t.Fatalf("offered %+v", m)
	}

	// The updater looking after it is offered the same destinations.
	var upd ownTelemetry
	updUID := newUID(t)
	ts.connect(agentSpec{uid: updUID, token: tok.Token, onMessage: upd.onMessage,
		identifying: kvs("service.name", "myriarch-updater", "service.version", "0.1.0", "service.instance.id", updUID.String()),
		nonIdent: kvs("host.name", "a", "os.type", "linux", "host.arch", "amd64",
			"dev.myriarch.collector.instance_uid", uid.String(), "dev.myriarch.install.mode", "binary"),
		capabilities: baseCaps | ownCaps,
	})
	ts.waitAgent(updUID, "the updater's telemetry received", has)
	if u := upd.last(); u.OwnMetricsConnSettings.GetDestinationEndpoint() != "http://127.0.0.1:4318/v1/metrics" {
		t.Fatalf("the updater was offered %+v", u)
	}

	// Metrics count them.
	_, text := getNoToken(t, ts, "/metrics")
	if !strings.Contains(text, `myriarch_telemetry_offers{state="applying"}`) || !strings.Contains(text, `myriarch_telemetry_offers{state="offered"} 0`) {
		t.Errorf("metrics:\n%s", grepLines(text, "myriarch_telemetry"))
	}

	// Without the section, both are offered no destinations.
	est.fleet("edge", "0.149.0", "")
	ts.reload()
	ts.waitAgent(uid, "telemetry taken back", func(a admin.Agent) bool { return a.Telemetry != nil && telemetryOf(a).State == telemetry.StateNone })
	for name, o := range map[string]*ownTelemetry{"collector": &col, "updater": &upd} {
		testkit.WaitFor(t, "the "+name+" offered no destinations", func() bool {
			m := o.last()
			// Empty destinations: the upstream Supervisor ignores an offer
			// without own_* and needs an empty one to stop a signal.
			return m.OwnMetricsConnSettings != nil && m.OwnMetricsConnSettings.GetDestinationEndpoint() == "" &&
				m.OwnLogsConnSettings != nil && m.OwnLogsConnSettings.GetDestinationEndpoint() == ""
		})
	}
}
