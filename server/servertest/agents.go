// Package servertest starts a real myriarchd for the tests of other
// packages (StartServer) and runs real opamp-go agents against it:
// collectors as the upstream Supervisor presents them and look-alikes of
// myriarch-updater that receive package offers and report statuses when
// the test says so.
package servertest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// Capabilities of the simulated agents.
const (
	BaseCaps = protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat
	CollectorCaps = BaseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig
	UpdaterCaps = BaseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses
)

// KVs turns key, value, key, value… into string attributes.
func KVs(pairs ...string) []*protobufs.KeyValue {
	var out []*protobufs.KeyValue
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, &protobufs.KeyValue{Key: pairs[i], Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: pairs[i+1]}}})
	}
	return out
}

type nopLogger struct{}

func (nopLogger) Debugf(context.Context, string, ...any) {}
func (nopLogger) Errorf(context.Context, string, ...any) {}

// Agent is one running opamp-go client.
type Agent struct {
	UID    uuid.UUID
	Client client.OpAMPClient

	mu       sync.Mutex
	messages []*types.MessageData // guarded by mu
	stopped  sync.Once
}

// Spec describes an agent to start.
type Spec struct {
	OpAMPURL       string // ws://…/v1/opamp
	Token          string
	UID            uuid.UUID // zero: a new UUIDv7
	Identifying    []*protobufs.KeyValue
	NonIdentifying []*protobufs.KeyValue
	Capabilities   protobufs.AgentCapabilities
	Health         *protobufs.ComponentHealth
	// IgnoreConfig: remote configs are received but never applied nor
	// answered (with AcceptsRemoteConfig, which makes the agent a
	// collector); what it reports is up to the test.
	IgnoreConfig bool
}

// Start connects an agent; it is stopped when the test ends.
func Start(t testing.TB, s Spec) *Agent {
	t.Helper()
	if s.UID == uuid.Nil {
		u, err := uuid.NewV7()
		if err != nil {
			t.Fatal(err)
		}
		s.UID = u
	}
	a := &Agent{UID: s.UID, Client: client.NewWebSocket(nopLogger{})}
	if err := a.Client.SetAgentDescription(&protobufs.AgentDescription{IdentifyingAttributes: s.Identifying, NonIdentifyingAttributes: s.NonIdentifying}); err != nil {
		t.Fatal(err)
	}
	h := s.Health
	if h == nil {
		h = &protobufs.ComponentHealth{Healthy: true, Status: "StatusOK"}
	}
	if err := a.Client.SetHealth(h); err != nil {
		t.Fatal(err)
	}
	caps := s.Capabilities
	if caps == 0 {
		caps = BaseCaps
	}
	settings := types.StartSettings{
		OpAMPServerURL: s.OpAMPURL,
		Header:         http.Header{"Authorization": {"Bearer " + s.Token}},
		InstanceUid:    types.InstanceUid(s.UID),
		Capabilities:   caps,
		Callbacks: types.Callbacks{OnMessage: func(_ context.Context, m *types.MessageData) {
			a.mu.Lock()
			a.messages = append(a.messages, m)
			a.mu.Unlock()
			if rc := m.RemoteConfig; rc != nil && caps&protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig != 0 && !s.IgnoreConfig {
				go a.applyConfig(rc)
			}
		}},
	}
	if caps&protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages != 0 {
		settings.PackagesStateProvider = &MemPackages{}
	}
	if err := a.Client.Start(context.Background(), settings); err != nil {
		t.Fatalf("start agent %s: %v", s.UID, err)
	}
	t.Cleanup(a.Stop)
	return a
}

// Stop disconnects the agent; again, it does nothing (opamp-go's Stop,
// called again, waits for its context to end).
func (a *Agent) Stop() {
	a.stopped.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Client.Stop(ctx)
	})
}

// WaitMessage waits for a message from the server that cond accepts.
func (a *Agent) WaitMessage(t testing.TB, what string, cond func(*types.MessageData) bool) *types.MessageData {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		a.mu.Lock()
		for _, m := range a.messages {
			if cond(m) {
				a.mu.Unlock()
				return m
			}
		}
		a.mu.Unlock()
	}
	t.Fatalf("agent %s: no %s from the server", a.UID, what)
	return nil
}

// RejectedType is a component type the simulated collectors do not have: a
// remote config naming it (as "nosuch/…" or "type: nosuch") is reported
// FAILED, as the Supervisor reports a config its collector refuses.
const RejectedType = "nosuch"

// applyConfig answers a remote config as a collector under the Supervisor
// does: APPLIED with its hash, or FAILED when it names RejectedType.
func (a *Agent) applyConfig(rc *protobufs.AgentRemoteConfig) {
	body := string(rc.GetConfig().GetConfigMap()[""].GetBody())
	st := &protobufs.RemoteConfigStatus{LastRemoteConfigHash: rc.ConfigHash, Status: protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED}
	if strings.Contains(body, RejectedType+"/") || strings.Contains(body, "type: "+RejectedType) {
		st.Status = protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED
		st.ErrorMessage = `unknown type: "` + RejectedType + `"`
	}
	_ = a.Client.SetRemoteConfigStatus(st)
}

// Collector starts an agent presenting itself as a collector of the given
// version on host, with extra non-identifying attributes.
func Collector(t testing.TB, opampURL, token, host, version string, extra ...string) *Agent {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return Start(t, Spec{OpAMPURL: opampURL, Token: token, UID: u,
		Identifying:    CollectorIdentity(u, version),
		NonIdentifying: append(KVs("host.name", host, "os.type", "linux", "host.arch", "amd64"), KVs(extra...)...),
		Capabilities:   CollectorCaps})
}

// CollectorIdentity is a collector's identifying attributes at version.
func CollectorIdentity(uid uuid.UUID, version string) []*protobufs.KeyValue {
	return KVs("service.name", "otelcol-contrib", "service.version", version, "service.instance.id", uid.String())
}

// Updater starts a myriarch-updater look-alike on host that claims collector.
func Updater(t testing.TB, opampURL, token, host string, collector uuid.UUID) *Agent {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return Start(t, Spec{OpAMPURL: opampURL, Token: token, UID: u,
		Identifying: KVs("service.name", "myriarch-updater", "service.version", "0.1.0", "service.instance.id", u.String()),
		NonIdentifying: KVs("host.name", host, "os.type", "linux", "host.arch", "amd64",
			"dev.myriarch.install.mode", "binary", "dev.myriarch.collector.instance_uid", collector.String()),
		Capabilities: UpdaterCaps})
}

// WaitOffer waits for a package offer of version.
func (a *Agent) WaitOffer(t testing.TB, pkg, version string) *protobufs.PackagesAvailable {
	t.Helper()
	m := a.WaitMessage(t, "offer of "+pkg+" "+version, func(m *types.MessageData) bool {
		p := m.PackagesAvailable.GetPackages()[pkg]
		return p != nil && p.Version == version
	})
	return m.PackagesAvailable
}

// ReportPackage reports a status of the offered package; percent > 0 adds
// download details.
func (a *Agent) ReportPackage(t testing.TB, offer *protobufs.PackagesAvailable, pkg string, status protobufs.PackageStatusEnum, percent float64, errMsg string) {
	t.Helper()
	pa := offer.Packages[pkg]
	st := &protobufs.PackageStatus{Name: pkg, ServerOfferedVersion: pa.Version, ServerOfferedHash: pa.Hash, Status: status, ErrorMessage: errMsg}
	if percent > 0 {
		st.DownloadDetails = &protobufs.PackageDownloadDetails{DownloadPercent: percent, DownloadBytesPerSecond: 1 << 20}
	}
	if err := a.Client.SetPackageStatuses(&protobufs.PackageStatuses{
		Packages: map[string]*protobufs.PackageStatus{pkg: st}, ServerProvidedAllPackagesHash: offer.AllPackagesHash,
	}); err != nil {
		t.Fatal(err)
	}
}

// MemPackages is the minimal PackagesStateProvider opamp-go demands of an
// agent that accepts packages; the tests report statuses themselves.
type MemPackages struct {
	mu       sync.Mutex
	statuses *protobufs.PackageStatuses // guarded by mu
}

func (m *MemPackages) AllPackagesHash() ([]byte, error)                  { return nil, nil }
func (m *MemPackages) SetAllPackagesHash([]byte) error                   { return nil }
func (m *MemPackages) Packages() ([]string, error)                       { return nil, nil }
func (m *MemPackages) SetPackageState(string, types.PackageState) error  { return nil }
func (m *MemPackages) CreatePackage(string, protobufs.PackageType) error { return nil }
func (m *MemPackages) FileContentHash(string) ([]byte, error)            { return nil, nil }
func (m *MemPackages) DeletePackage(string) error                        { return nil }
func (m *MemPackages) PackageState(string) (types.PackageState, error) {
	return types.PackageState{}, errors.New("none")
}
func (m *MemPackages) UpdateContent(context.Context, string, io.Reader, []byte, []byte) error {
	return nil
}
func (m *MemPackages) LastReportedStatuses() (*protobufs.PackageStatuses, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.statuses, nil
}
func (m *MemPackages) SetLastReportedStatuses(s *protobufs.PackageStatuses) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.statuses = s
	return nil
}
