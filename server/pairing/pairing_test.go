package pairing

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/store"
)

var (
	credA = store.Credential{Kind: "token", ID: "a"}
	credB = store.Credential{Kind: "token", ID: "b"}
	certA = store.Credential{Kind: "certificate", ID: "CN=a"}
)

func TestRules(t *testing.T) {
	col := uuid.New()
	tests := []struct {
		name        string
		collector   Agent
		updater     Agent
		wantCol     string
		wantUpd     string
		wantReason  string
		noCollector bool
	}{
		{"linked", Agent{Cred: credA, Host: "h1"}, Agent{Cred: credA, Host: "h1"}, Linked, Linked, "", false},
		{"credential mismatch", Agent{Cred: credA, Host: "h1"}, Agent{Cred: credB, Host: "h1"}, NoUpdater, Unlinked, ReasonCredential, false},
		{"token vs certificate", Agent{Cred: credA}, Agent{Cred: certA}, NoUpdater, Unlinked, ReasonCredential, false},
		{"same certificate", Agent{Cred: certA, Host: "h"}, Agent{Cred: certA, Host: "h"}, Linked, Linked, "", false},
		{"host name mismatch", Agent{Cred: credA, Host: "h1"}, Agent{Cred: credA, Host: "h2"}, NoUpdater, Unlinked, ReasonHostName, false},
		{"collector without host.name", Agent{Cred: credA}, Agent{Cred: credA, Host: "h2"}, Linked, Linked, "", false},
		{"updater without host.name", Agent{Cred: credA, Host: "h1"}, Agent{Cred: credA}, Linked, Linked, "", false},
		{"unknown collector", Agent{}, Agent{Cred: credA}, "", Unlinked, ReasonUnknownCollector, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := New()
			if !tt.noCollector {
				c := tt.collector
				c.UID, c.Role, c.Online = col, Collector, true
				ix.Update(c)
			}
			u := tt.updater
			u.UID, u.Role, u.Online, u.Claim, u.HasClaim = uuid.New(), Updater, true, col, true
			ix.Update(u)
			us, _ := ix.Updater(u.UID)
			if us.State != tt.wantUpd || us.Reason != tt.wantReason {
				t.Fatalf("updater = %+v, want %s/%q", us, tt.wantUpd, tt.wantReason)
			}
			cs, ok := ix.Collector(col)
			if tt.noCollector {
				if ok {
					t.Fatalf("unknown collector got a state: %+v", cs)
				}
				return
			}
			if cs.State != tt.wantCol {
				t.Fatalf("collector = %+v, want %s", cs, tt.wantCol)
			}
			if tt.wantCol == Linked && (cs.Updater != u.UID || us.Collector != col) {
				t.Fatalf("link not mutual: %+v / %+v", cs, us)
			}
		})
	}
}

func TestAmbiguityAppearsAndResolves(t *testing.T) {
	ix := New()
	col := uuid.New()
	ix.Update(Agent{UID: col, Role: Collector, Cred: credA, Host: "h", Online: true})
	u1 := Agent{UID: uuid.New(), Role: Updater, Cred: credA, Host: "h", Online: true, Claim: col, HasClaim: true, LastSeen: time.Now()}
	u2 := Agent{UID: uuid.New(), Role: Updater, Cred: credA, Host: "h", Online: true, Claim: col, HasClaim: true, LastSeen: time.Now()}
	ix.Update(u1)
	ch := ix.Update(u2)
	if len(ch) != 1 || ch[0].Old.State != Linked || ch[0].New.State != Ambiguous || len(ch[0].New.Claimants) != 2 {
		t.Fatalf("changes = %+v", ch)
	}
	for _, u := range []Agent{u1, u2} {
		if s, _ := ix.Updater(u.UID); s.State != Ambiguous {
			t.Fatalf("claimant state = %+v", s)
		}
	}
	// A third updater on another host is not a claimant and does not matter.
	ix.Update(Agent{UID: uuid.New(), Role: Updater, Cred: credA, Host: "other", Online: true, Claim: col, HasClaim: true})
	if s, _ := ix.Collector(col); len(s.Claimants) != 2 {
		t.Fatalf("host-mismatched updater counted as claimant: %+v", s)
	}
	u2.Online = false
	ch = ix.Update(u2)
	if len(ch) != 1 || ch[0].New.State != Linked || ch[0].New.Updater != u1.UID {
		t.Fatalf("after disconnect: %+v", ch)
	}
	if s, _ := ix.Updater(u2.UID); s.State != Unlinked || s.Reason != ReasonSuperseded {
		t.Fatalf("offline claimant = %+v", s)
	}
	// The remaining updater moves its claim away: the collector has no updater.
	u1.Claim = uuid.New()
	ch = ix.Update(u1)
	s, _ := ix.Collector(col)
	if s.State != Linked || s.Updater != u2.UID {
		// u2 is offline but still a valid claimant: the link waits for it.
		t.Fatalf("after claim moved: %+v (changes %+v)", s, ch)
	}
	u2.Claim = uuid.New()
	ix.Update(u2)
	if s, _ := ix.Collector(col); s.State != NoUpdater {
		t.Fatalf("no claimants left: %+v", s)
	}
}

func TestCollectorArrivingAfterUpdater(t *testing.T) {
	ix := New()
	col := uuid.New()
	u := Agent{UID: uuid.New(), Role: Updater, Cred: credA, Online: true, Claim: col, HasClaim: true}
	ix.Update(u)
	if s, _ := ix.Updater(u.UID); s.Reason != ReasonUnknownCollector {
		t.Fatalf("before collector: %+v", s)
	}
	ch := ix.Update(Agent{UID: col, Role: Collector, Cred: credA, Online: true})
	if len(ch) != 1 || ch[0].New.State != Linked {
		t.Fatalf("changes = %+v", ch)
	}
	if s, _ := ix.Updater(u.UID); s.State != Linked {
		t.Fatalf("after collector: %+v", s)
	}
	// An updater without a claim is unlinked with a reason.
	v := Agent{UID: uuid.New(), Role: Updater, Cred: credA, Online: true}
	ix.Update(v)
	if s, _ := ix.Updater(v.UID); s.State != Unlinked || s.Reason != ReasonNoClaim {
		t.Fatalf("no claim: %+v", s)
	}
}
