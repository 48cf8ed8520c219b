package main

import (
	"context"
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

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/servertest"
)

const contextBlueprint = `name: gw
version: 1
owner: o
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: files
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["/var/log/${app.name}/*.log"]
  - name: out
    class: exporter
    type: file
    version: 1
    config:
      path: /var/lib/otelcol/${site.id}.json
      port: ${site.port|'4318'}
pipelines:
  logs:
    - component: in
    - component: files
    - component: out
`

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRenderWithContextFile(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"teams/df/blueprints/gw.yaml": contextBlueprint,
		"ctx.json": `{"site.id": "edge-007", "site.port": "4319"}`, "bad.json": `{"site.id": 7, "x": null}`, "list.json": `[1]`,
		"typed.json": `{"context": {"site.id": "edge-007", "site.port": "4319"}, "types": {"site.port": "number"}}`})
	// A flat context is strings, as the attribute view is: "4319" stays a
	// string; a document's types make it a number.
	code, out, errOut := render("--root", root, "df/gw", "--context", filepath.Join(root, "ctx.json"))
	if code != 0 || !strings.Contains(out, `path: "/var/lib/otelcol/edge-007.json"`) || !strings.Contains(out, `port: "4319"`) ||
		strings.Contains(out, "filelog") || !strings.Contains(errOut, "warning: receiver filelog/files dropped: ${app.name} is not in the context") {
		t.Fatalf("exit %d\n%s\nstderr %s", code, out, errOut)
	}
	if code, out, _ := render("--root", root, "df/gw", "--context", filepath.Join(root, "typed.json")); code != 0 || !strings.Contains(out, "port: 4319\n") {
		t.Fatalf("typed: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--context", filepath.Join(root, "bad.json")}, 1, `"site.id" is 7, not a string; "x" is null, not a string`},
		{[]string{"--context", filepath.Join(root, "list.json")}, 1, "not a JSON object"},
		{[]string{"--context", filepath.Join(root, "nope.json")}, 1, "--context: open"},
		{[]string{"--context", "x", "--context-from-agent", "y"}, 2, "exclude each other"},
		{[]string{"--context", filepath.Join(root, "ctx.json"), "df/none"}, 1, "df/none"},
	} {
		args := append([]string{"--root", root}, tc.args...)
		if !strings.Contains(strings.Join(tc.args, " "), "df/") {
			args = append(args, "df/gw")
		}
		code, _, errOut := render(args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	// A missing variable outside a receiver refuses the render, naming it.
	writeFiles(t, root, map[string]string{"teams/df/blueprints/gw.yaml": strings.Replace(contextBlueprint, "${site.id}", "${site.name}", 1)})
	if code, _, errOut := render("--root", root, "df/gw", "--context", filepath.Join(root, "ctx.json")); code != 1 ||
		!strings.Contains(errOut, "blueprint df/gw: exporter file/out") || !strings.Contains(errOut, "${site.name}") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// The preview of a live collector is byte for byte what myriarchd sends it.
func TestRenderContextFromAgentIsWhatTheServerSends(t *testing.T) {
	est := t.TempDir()
	writeFiles(t, est, map[string]string{"teams/df/blueprints/gw.yaml": contextBlueprint,
		"fleets/edge.yaml": "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: df/gw\n"})
	srv := servertest.StartServer(t, server.Options{Estate: est})
	_, secret, err := srv.Tokens().Create(context.Background(), "edge", nil)
	if err != nil {
		t.Fatal(err)
	}
	uid := uuid.Must(uuid.NewV7())
	c := client.NewWebSocket(nil)
	desc := &protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("service.name", "otelcol-contrib"), testkit.KV("service.version", "0.149.0")},
		NonIdentifyingAttributes: []*protobufs.KeyValue{testkit.KV("site.type", "edge"), testkit.KV("site.id", "edge-042"), testkit.KV("app.name", "shop"),
			testkit.KV("host.name", "h1")},
	}
	if err := c.SetAgentDescription(desc); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	err = c.Start(context.Background(), types.StartSettings{
		OpAMPServerURL: srv.OpAMPURL(), InstanceUid: types.InstanceUid(uid),
		Header: http.Header{"Authorization": []string{"Bearer " + secret}},
		Capabilities: protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
			protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig | protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig,
		Callbacks: types.Callbacks{OnMessage: func(_ context.Context, m *types.MessageData) {
			if m.RemoteConfig != nil {
				select {
				case got <- m.RemoteConfig.GetConfig().GetConfigMap()[""].GetBody():
				default:
				}
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	var sent []byte
	select {
	case sent = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("no remote config received")
	}
	t.Setenv("MYRIARCH_ADMIN_TOKEN", srv.AdminToken())
	code, out, errOut := render("--root", est, "df/gw", "--context-from-agent", uid.String(), "--admin", "http://"+srv.AdminAddr().String())
	if code != 0 || out != string(sent) {
		t.Fatalf("exit %d, stderr %q\n--- preview\n%s\n--- sent\n%s", code, errOut, out, sent)
	}
	if !strings.Contains(out, "/var/log/shop/*.log") {
		t.Fatalf("the context was not applied:\n%s", out)
	}
	code, _, errOut = render("--root", est, "df/gw", "--context-from-agent", uuid.NewString(), "--admin", "http://"+srv.AdminAddr().String())
	if code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("unknown agent: exit %d, stderr %q", code, errOut)
	}
}
