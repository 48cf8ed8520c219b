package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/servertest"
)

// fakeUpdater is a real opamp-go client that presents itself as a
// myriarch-updater and records the offers it receives.
type fakeUpdater struct {
	t      *testing.T
	uid    uuid.UUID
	client client.OpAMPClient
	mu     sync.Mutex
	offers []*protobufs.PackagesAvailable
}

const updaterCaps = baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses

func (ts *testServer) startUpdater(token string, collector uuid.UUID, host, mode string) *fakeUpdater {
	ts.t.Helper()
	u := &fakeUpdater{t: ts.t, uid: newUID(ts.t)}
	c := client.NewWebSocket(nopLogger{})
	non := kvs("host.name", host, "os.type", "linux", "host.arch", "amd64",
		"dev.myriarch.install.mode", mode, "dev.myriarch.collector.instance_uid", collector.String())
	c.SetAgentDescription(&protobufs.AgentDescription{
		IdentifyingAttributes:    kvs("service.name", "myriarch-updater", "service.version", "0.1.0", "service.instance.id", u.uid.String()),
		NonIdentifyingAttributes: non,
	})
	c.SetHealth(&protobufs.ComponentHealth{Healthy: true})
	err := c.Start(context.Background(), types.StartSettings{
		OpAMPServerURL:        ts.OpAMPURL(),
		Header:                http.Header{"Authorization": []string{"Bearer " + token}},
		InstanceUid:           types.InstanceUid(u.uid),
		Capabilities:          updaterCaps,
		PackagesStateProvider: &servertest.MemPackages{},
		Callbacks: types.Callbacks{
			OnMessage: func(_ context.Context, m *types.MessageData) {
				if m.PackagesAvailable != nil {
					u.mu.Lock()
					u.offers = append(u.offers, m.PackagesAvailable)
					u.mu.Unlock()
				}
			},
		},
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	u.client = &stopOnce{OpAMPClient: c}
	ts.t.Cleanup(func() { u.stop() })
	return u
}

func (u *fakeUpdater) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = u.client.Stop(ctx)
}

func (u *fakeUpdater) offerCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.offers)
}

// waitOffer waits for an offer satisfying cond.
func (u *fakeUpdater) waitOffer(what string, cond func(*protobufs.PackagesAvailable) bool) *protobufs.PackagesAvailable {
	u.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		u.mu.Lock()
		for _, o := range u.offers {
			if cond(o) {
				u.mu.Unlock()
				return o
			}
		}
		u.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	u.t.Fatalf("updater %s: no offer: %s", u.uid, what)
	return nil
}

// report sends a package status for the offered package.
func (u *fakeUpdater) report(offer *protobufs.PackagesAvailable, name string, status protobufs.PackageStatusEnum, msg string) {
	u.t.Helper()
	pa := offer.Packages[name]
	st := &protobufs.PackageStatuses{
		Packages: map[string]*protobufs.PackageStatus{name: {
			Name: name, ServerOfferedVersion: pa.Version, ServerOfferedHash: pa.Hash, Status: status, ErrorMessage: msg,
		}},
		ServerProvidedAllPackagesHash: offer.AllPackagesHash,
	}
	if status == protobufs.PackageStatusEnum_PackageStatusEnum_Downloading {
		st.Packages[name].DownloadDetails = &protobufs.PackageDownloadDetails{DownloadPercent: 42, DownloadBytesPerSecond: 1000}
	}
	if err := u.client.SetPackageStatuses(st); err != nil {
		u.t.Fatal(err)
	}
}
