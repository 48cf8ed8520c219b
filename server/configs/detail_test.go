package configs

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// Collectors outside every fleet with a configuration share one empty
// detail; a collector given a configuration holds its own, and gives it
// back once it leaves the fleet, also across a restart.
func TestRecordsWithoutConfigurationShareDetail(t *testing.T) {
	h := newHarness(t)
	h.start()
	outside, edge := uuid.New(), uuid.New()
	h.connect(outside, "site.type=core")
	h.connect(edge, "site.type=edge", "site.id=s1")
	h.message(outside, &protobufs.AgentToServer{EffectiveConfig: &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{
		ConfigMap: map[string]*protobufs.AgentConfigFile{"": {Body: []byte("service: {}\n")}}}}}, false)

	if r := h.rec(outside); r.detail != noDetail || r.effective == "" || r.syncState() != SyncNone {
		t.Fatalf("collector outside the fleets: own detail %t, effective %q, sync %s", r.detail != noDetail, r.effective, r.syncState())
	}
	if r := h.rec(edge); r.detail == noDetail || r.assigned == "" {
		t.Fatalf("collector of the edge fleet: own detail %t, assigned %q", r.detail != noDetail, r.assigned)
	}

	h.write("fleets/edge.yaml", strings.Replace(edgeFleet, "site.type: edge", "site.type: elsewhere", 1))
	h.reload()
	if r := h.rec(edge); r.detail != noDetail || r.syncState() != SyncNone {
		t.Fatalf("after it left its fleet: own detail %t (%+v), sync %s", r.detail != noDetail, *r.detail, r.syncState())
	}

	h.restart()
	for name, uid := range map[string]uuid.UUID{"outside": outside, "edge": edge} {
		if r := h.rec(uid); r.detail != noDetail {
			t.Errorf("%s after a restart: own detail %+v", name, *r.detail)
		}
	}
	if r := h.rec(outside); r.effective == "" {
		t.Error("the effective hash was not kept across the restart")
	}
}

// Writing through a record whose detail is shared gives it its own first.
func TestOwnAndShed(t *testing.T) {
	a, b := newRecord(uuid.New()), newRecord(uuid.New())
	a.addFailed("h1")
	if a.detail == noDetail || !noDetail.zero() || b.detail != noDetail {
		t.Fatalf("addFailed wrote the shared detail: %+v", *noDetail)
	}
	a.sendAgain()
	b.sendAgain()
	b.clearFailing()
	if b.detail != noDetail {
		t.Fatal("clearing what a record does not hold gave it a detail")
	}
	a.own().failed = nil
	a.shed()
	if a.detail != noDetail {
		t.Fatalf("an all-zero detail was kept: %+v", *a.detail)
	}
	a.restore(persisted{persistedFields: persistedFields{Fleet: "edge", Wave: 2, Effective: "e"}})
	if a.detail != noDetail || a.fleet != "edge" || a.wave != 2 || a.effective != "e" {
		t.Fatalf("restoring a record without a configuration: own detail %t, fleet %q wave %d effective %q", a.detail != noDetail, a.fleet, a.wave, a.effective)
	}
	a.restore(persisted{persistedFields: persistedFields{Assigned: "x", Desired: "x"}})
	if a.detail == noDetail || a.assigned != "x" || !noDetail.zero() {
		t.Fatalf("restoring an assignment: own detail %t, assigned %q", a.detail != noDetail, a.assigned)
	}
}
