package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/providers"
	"github.com/myriarch/myriarch/agent/updater"
	"github.com/myriarch/myriarch/internal/configrender"
)

// The real updater reports its providers; the server renders its linked
// collector's context from them, and environment variables the updater's
// configuration does not allow never reach the server.
func TestProvidersReachTheServer(t *testing.T) {
	s := startServer(t)
	code, body := api(t, s, "POST", "/api/v1/tokens", `{"name":"site-1"}`)
	if code != 201 {
		t.Fatalf("token: %d %s", code, body)
	}
	var tok struct{ Token string }
	json.Unmarshal(body, &tok)
	t.Setenv("MYRIARCH_IT_ALLOWED", "yes")
	t.Setenv("MYRIARCH_IT_SECRET", "must-not-leave")

	root := t.TempDir()
	storage := filepath.Join(root, "supervisor")
	os.MkdirAll(storage, 0o700)
	collectorUID := uuid.Must(uuid.NewV7())
	os.WriteFile(filepath.Join(storage, "persistent_state.yaml"), []byte(fmt.Sprintf("instance_id: %s\n", collectorUID)), 0o600)
	off := false
	cfg := config.NewDefaultConfig()
	cfg.Server.Endpoint = s.OpAMPURL()
	cfg.Server.Token = tok.Token
	cfg.Supervisor.StorageDir = storage
	cfg.Supervisor.Control = config.ControlService
	cfg.Supervisor.Service = "otelcol-supervisor-test"
	cfg.Collector.Root = filepath.Join(root, "collector")
	cfg.StateDir = filepath.Join(root, "state")
	cfg.Trust.RequireSignature = false
	cfg.Providers = providers.Config{
		Env:          providers.EnvConfig{Allow: []string{"MYRIARCH_IT_ALLOWED"}},
		Local:        providers.LocalConfig{Vars: map[string]any{"site_code": "x-1"}},
		LocalDynamic: providers.LocalDynamicConfig{Items: []providers.LocalDynamicItem{{Vars: map[string]any{"path": "/a"}}, {Vars: map[string]any{"path": "/b"}}}},
		Docker:       providers.DockerConfig{Enabled: &off},
	}
	u, err := updater.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, u)
	upd := waitAgent(t, s, u.InstanceUID(), "updater online", func(a agentJSON) bool { return a.Online && a.Attributes["host.name"] != "" })

	c := client.NewWebSocket(nopLogger{})
	c.SetAgentDescription(&protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{
			{Key: "service.name", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: "otelcol-contrib"}}},
		},
		NonIdentifyingAttributes: []*protobufs.KeyValue{
			{Key: "host.name", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: upd.Attributes["host.name"]}}},
		},
	})
	if err := c.Start(context.Background(), types.StartSettings{
		OpAMPServerURL: s.OpAMPURL(), InstanceUid: types.InstanceUid(collectorUID),
		Header:       http.Header{"Authorization": []string{"Bearer " + tok.Token}},
		Capabilities: protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus | protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig,
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	waitAgent(t, s, collectorUID, "linked collector", func(a agentJSON) bool { return a.Pairing["state"] == "linked" })

	var doc configrender.Document
	var raw []byte
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, raw = api(t, s, "GET", "/api/v1/agents/"+collectorUID.String()+"/context", "")
		if code == 200 && json.Unmarshal(raw, &doc) == nil && doc.Source == "attributes+updater" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector's context never came from its updater: %d %s", code, raw)
		}
	}
	if doc.Context["local.site_code"] != "x-1" || doc.Context["env.MYRIARCH_IT_ALLOWED"] != "yes" || doc.Context["agent.id"] != u.InstanceUID().String() ||
		len(doc.Dynamic["local_dynamic"]) != 2 || doc.Dynamic["local_dynamic"][1].Vars["local_dynamic.path"] != "/b" {
		t.Fatalf("context document %s", raw)
	}
	stored, _ := s.Registry().Get(u.InstanceUID())
	for _, where := range [][]byte{raw, stored.Extra} {
		if strings.Contains(string(where), "MYRIARCH_IT_SECRET") || strings.Contains(string(where), "must-not-leave") {
			t.Fatalf("a variable the configuration does not allow reached the server: %s", where)
		}
	}
	if !strings.Contains(string(stored.Extra), "x-1") {
		t.Fatalf("the snapshot is not stored with the updater: %s", stored.Extra)
	}
}
