package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/audit"
)

// DELETE /api/v1/agents/{uid} on instances sharing PostgreSQL: an online
// agent is refused (409) and kept; once it is offline, forgetting it on
// one instance removes it from both, audited; it comes back as new.
func TestForgetAnAgentOnEveryInstance(t *testing.T) {
	ins := startInstances(t, 2)
	a, b := ins[0], ins[1]
	tok := a.createToken("site", nil)
	uid, c := a.startCollector(tok.Token, "h1", "0.149.0")
	b.waitAgent(uid, "online on the other instance", func(x admin.Agent) bool { return x.Online })

	path := "/api/v1/agents/" + uid.String()
	if code, body := b.api("DELETE", path, nil); code != http.StatusConflict {
		t.Fatalf("forget an online agent: %d %s", code, body)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ts := range ins {
		ts.waitAgent(uid, "offline", func(x admin.Agent) bool { return !x.Online })
	}
	head := b.auditHead()
	if code, body := b.api("DELETE", path, nil); code != http.StatusOK {
		t.Fatalf("forget an offline agent: %d %s", code, body)
	}
	for _, ts := range ins {
		testkit.WaitWithin(t, 15*time.Second, "the agent gone from every instance", func() bool {
			code, _ := ts.api("GET", path, nil)
			return code == http.StatusNotFound
		})
	}
	p, err := b.Audit().List(context.Background(), audit.Query{Limit: 1})
	if err != nil || len(p.Records) != 1 || p.Records[0].ID <= head || p.Records[0].Action != "agent.forget" || p.Records[0].Outcome != audit.OutcomeOK {
		t.Fatalf("audit %+v %v", p.Records, err)
	}
	if code, _ := a.api("DELETE", path, nil); code != http.StatusNotFound {
		t.Fatalf("forget it again: %d", code)
	}
	// It comes back: registered anew.
	a.connect(agentSpec{uid: uid, token: tok.Token, identifying: kvs("service.name", pkgName, "service.version", "0.149.0", "service.instance.id", uid.String()),
		nonIdent: kvs("host.name", "h1"), capabilities: baseCaps})
	a.waitAgent(uid, "registered again", func(x admin.Agent) bool { return x.Online && len(x.Events) > 0 && x.Events[0].Type == "registered" })
}
