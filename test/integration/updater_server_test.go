package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/updater"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
)

func startServer(t *testing.T) *server.Server {
	t.Helper()
	return servertest.StartServer(t, server.Options{})
}

func api(t *testing.T, s *server.Server, method, path, body string) (int, []byte) {
	t.Helper()
	return servertest.API(t, s, method, path, body)
}

type agentJSON struct {
	Kind       string             `json:"kind"`
	Online     bool               `json:"online"`
	Attributes map[string]string  `json:"attributes"`
	Updater    map[string]*string `json:"updater"`
	Pairing    map[string]any     `json:"pairing"`
}

func waitAgent(t *testing.T, s *server.Server, uid uuid.UUID, what string, cond func(agentJSON) bool) agentJSON {
	t.Helper()
	var last []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		code, body := api(t, s, "GET", "/api/v1/agents/"+uid.String(), "")
		last = body
		if code != 200 {
			continue
		}
		var a agentJSON
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatal(err)
		}
		if cond(a) {
			return a
		}
	}
	t.Fatalf("agent %s: timed out waiting for %s; last: %s", uid, what, last)
	return agentJSON{}
}

// runUntilCleanup runs u until the test ends, and fails the test when it
// does not stop within 10 s then.
func runUntilCleanup(t *testing.T, u *updater.Updater) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- u.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("updater did not stop")
		}
	})
}

type nopLogger struct{}

func (nopLogger) Debugf(context.Context, string, ...any) {}
func (nopLogger) Errorf(context.Context, string, ...any) {}

// TestUpdaterAgainstMyriarchd runs the real updater against the real server:
// the server shows the updater's fields, and the updater pairs with the
// collector whose instance UID it reads from the supervisor's state file.
func TestUpdaterAgainstMyriarchd(t *testing.T) {
	s := startServer(t)
	code, body := api(t, s, "POST", "/api/v1/tokens", `{"name":"site-1","labels":{"wave":"1"}}`)
	if code != 201 {
		t.Fatalf("token: %d %s", code, body)
	}
	var tok struct{ Token string }
	json.Unmarshal(body, &tok)

	root := t.TempDir()
	storage := filepath.Join(root, "supervisor")
	os.MkdirAll(storage, 0o700)
	collectorUID := uuid.Must(uuid.NewV7())
	os.WriteFile(filepath.Join(storage, "persistent_state.yaml"),
		[]byte(fmt.Sprintf("instance_id: %s\nlast_remote_config_status: null\n", collectorUID)), 0o600)

	cfg := config.NewDefaultConfig()
	cfg.Server.Endpoint = s.OpAMPURL()
	cfg.Server.Token = tok.Token
	cfg.Supervisor.StorageDir = storage
	cfg.Supervisor.Control = config.ControlService
	cfg.Supervisor.Service = "otelcol-supervisor-test"
	cfg.Collector.Root = filepath.Join(root, "collector")
	cfg.StateDir = filepath.Join(root, "state")
	cfg.Trust.RequireSignature = false
	u, err := updater.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, u)

	// The pairing index learns of a report just after the registry shows
	// it: wait for both.
	a := waitAgent(t, s, u.InstanceUID(), "updater with its fields, unlinked for an unknown collector", func(a agentJSON) bool {
		return a.Kind == "updater" && a.Online && a.Updater["collectorInstanceUid"] != nil && a.Pairing["reason"] == "unknown collector"
	})
	want := map[string]string{
		"installMode":          "binary",
		"serverEndpoint":       s.OpAMPURL(),
		"supervisorService":    "otelcol-supervisor-test",
		"collectorInstanceUid": collectorUID.String(),
	}
	for k, v := range want {
		if a.Updater[k] == nil || *a.Updater[k] != v {
			t.Errorf("updater.%s = %v, want %s", k, a.Updater[k], v)
		}
	}
	if a.Attributes["labels.wave"] != "1" || a.Attributes["host.name"] == "" {
		t.Errorf("attribute view = %v", a.Attributes)
	}
	if a.Pairing["state"] != "unlinked" || a.Pairing["reason"] != "unknown collector" {
		t.Errorf("pairing before the collector connects = %v", a.Pairing)
	}

	// The collector (as the supervisor would report it) connects with the same token.
	host, _ := os.Hostname()
	c := client.NewWebSocket(nopLogger{})
	c.SetAgentDescription(&protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{
			{Key: "service.name", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: "otelcol-contrib"}}},
			{Key: "service.version", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: "0.149.0"}}},
		},
		NonIdentifyingAttributes: []*protobufs.KeyValue{
			{Key: "host.name", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: a.Attributes["host.name"]}}},
		},
	})
	_ = host
	c.SetHealth(&protobufs.ComponentHealth{Healthy: true})
	if err := c.Start(context.Background(), types.StartSettings{
		OpAMPServerURL: s.OpAMPURL(), InstanceUid: types.InstanceUid(collectorUID),
		Header:       http.Header{"Authorization": []string{"Bearer " + tok.Token}},
		Capabilities: protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig | protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth,
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	waitAgent(t, s, u.InstanceUID(), "linked updater", func(a agentJSON) bool { return a.Pairing["state"] == "linked" })
	waitAgent(t, s, collectorUID, "linked collector", func(a agentJSON) bool {
		return a.Pairing["state"] == "linked" && a.Pairing["updater"] == u.InstanceUID().String()
	})

	// The supervisor gets a new instance UID (rewritten by atomic rename): the updater re-reports it.
	newUID := uuid.Must(uuid.NewV7())
	tmp := filepath.Join(storage, ".persistent_state.tmp")
	os.WriteFile(tmp, []byte(fmt.Sprintf("instance_id: %s\n", newUID)), 0o600)
	os.Rename(tmp, filepath.Join(storage, "persistent_state.yaml"))
	waitAgent(t, s, u.InstanceUID(), "new collector UID", func(a agentJSON) bool {
		return a.Updater["collectorInstanceUid"] != nil && *a.Updater["collectorInstanceUid"] == newUID.String()
	})
	waitAgent(t, s, collectorUID, "collector without updater", func(a agentJSON) bool { return a.Pairing["state"] == "no_updater" })
}
