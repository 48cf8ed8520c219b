package server_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/offers"
	"github.com/myriarch/myriarch/server/store"
)

// TestRestartKeepsOffersAndHistory: a restart rebuilds pairing and offers
// from the store without changing them. Every collector keeps its offer
// state, error and updatedAt (one mid-download, one offered, one up to
// date), and no history gains events (no "offer … → none" and back, no
// second "pairing_linked"). The agents report as opampsrv hands their
// messages on (registry, then the offers hook), over plain HTTP so that
// nothing reconnects on its own.
func TestRestartKeepsOffersAndHistory(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.1")
	est.fleet("edge", "0.149.1", "")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	cred := store.Credential{Kind: "certificate", ID: "CN=edge"}
	report := func(uid uuid.UUID, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
		t.Helper()
		if _, err := ts.Registry().Report(uid, cred, msg, true, true); err != nil {
			t.Fatal(err)
		}
		resp := &protobufs.ServerToAgent{}
		ts.Offers().OnAgentMessage(uid, msg, resp)
		return resp
	}
	pair := func(host, version string) (col, upd uuid.UUID) {
		col, upd = uuid.New(), uuid.New()
		report(col, &protobufs.AgentToServer{Capabilities: uint64(baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig),
			AgentDescription: &protobufs.AgentDescription{
				IdentifyingAttributes:    kvs("service.name", pkgName, "service.version", version, "service.instance.id", col.String()),
				NonIdentifyingAttributes: kvs("host.name", host, "os.type", "linux", "host.arch", "amd64", "site.type", "edge"),
			}})
		report(upd, &protobufs.AgentToServer{Capabilities: uint64(baseCaps | protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses),
			AgentDescription: &protobufs.AgentDescription{
				IdentifyingAttributes: kvs("service.name", "myriarch-updater", "service.version", "0.1.0", "service.instance.id", upd.String()),
				NonIdentifyingAttributes: kvs("host.name", host, "os.type", "linux", "host.arch", "amd64",
					"dev.myriarch.collector.instance_uid", col.String(), "dev.myriarch.install.mode", "binary"),
			}})
		return col, upd
	}
	downloading, updD := pair("h1", "0.149.0")
	offered, updO := pair("h2", "0.149.0")
	upToDate, _ := pair("h3", "0.149.1")
	offer := report(updD, &protobufs.AgentToServer{SequenceNum: 1}).GetPackagesAvailable()
	if offer == nil || offer.Packages[pkgName] == nil {
		t.Fatalf("no offer for the updater: %v", offer)
	}
	report(updD, &protobufs.AgentToServer{SequenceNum: 2, PackageStatuses: &protobufs.PackageStatuses{
		ServerProvidedAllPackagesHash: offer.AllPackagesHash,
		Packages: map[string]*protobufs.PackageStatus{pkgName: {Name: pkgName, ServerOfferedVersion: "0.149.1",
			ServerOfferedHash: offer.Packages[pkgName].Hash, Status: protobufs.PackageStatusEnum_PackageStatusEnum_Downloading}},
	}})
	want := map[uuid.UUID]string{downloading: "downloading", offered: "offered", upToDate: "up_to_date"}
	before := map[uuid.UUID]admin.Agent{}
	for uid, state := range want {
		before[uid] = ts.waitAgent(uid, state, func(a admin.Agent) bool {
			return offerOf(a).State == state && pairingOf(a)["state"] == "linked"
		})
	}
	for _, a := range ts.Registry().List("updater", false) {
		before[a.UID], _ = ts.agent(a.UID)
	}

	ts = ts.restart()
	for uid, b := range before {
		a, ok := ts.agent(uid)
		if !ok {
			t.Fatalf("%s lost across the restart", uid)
		}
		mustEqual(t, "kind", a.Kind, b.Kind)
		mustEqual(t, "offer", offerString(offerOf(a)), offerString(offerOf(b)))
		if !reflect.DeepEqual(pairingOf(a), pairingOf(b)) {
			t.Errorf("%s pairing after the restart %v, before %v", uid, pairingOf(a), pairingOf(b))
		}
		if !reflect.DeepEqual(events(a), events(b)) {
			t.Errorf("%s (%s) events after the restart:\n%v\nbefore:\n%v", uid, a.Kind, events(a), events(b))
		}
	}
	// The offer still waiting for its updater is delivered when it polls.
	if got := report(updO, &protobufs.AgentToServer{SequenceNum: 7}).GetPackagesAvailable(); got == nil || string(got.Packages[pkgName].GetHash()) != string(offer.Packages[pkgName].Hash) {
		t.Fatalf("after the restart the waiting updater is offered %v, want the offer made before", got)
	}
}

func events(a admin.Agent) []string {
	var out []string
	for _, e := range a.Events {
		out = append(out, e.Type+": "+e.Message)
	}
	return out
}

func offerString(o offers.Offer) string {
	e := "<nil>"
	if o.Error != nil {
		e = *o.Error
	}
	return fmt.Sprintf("%s %s %s (error %q) updated %s", o.Package, o.Version, o.State, e, o.UpdatedAt.UTC().Format(time.RFC3339Nano))
}
