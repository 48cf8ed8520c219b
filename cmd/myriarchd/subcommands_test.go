package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/agent/verify/sigstoretest"
	"github.com/myriarch/myriarch/internal/cmdline"
	"github.com/myriarch/myriarch/server/servertest"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// cliCase is one command line of the every-subcommand test.
type cliCase struct {
	args []string // {{uid}}, {{token}}, {{key}}, {{dir}} are filled in
	code int
	out  string // in stdout
	err  string // in stderr
}

// Every subcommand of myriarchd, against a real server with an estate and
// a collector: each leaf of the command tree is run at least once (the
// test fails on a leaf it does not run), with its exit code and what it
// prints; each one that takes --output prints JSON and YAML that parse.
func TestEverySubcommandAgainstAServer(t *testing.T) {
	est := t.TempDir()
	if err := site.WriteGatewayBlueprint(est, "127.0.0.1:4318", "otlphttp", "127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}
	if err := site.WriteFile(est, "fleets/gw.yaml", "name: gw\nselector: {site.type: gw}\n"+site.GatewayConfig); err != nil {
		t.Fatal(err)
	}
	ts := startTestServer(t, est)
	_, secret, err := ts.Tokens().Create(context.Background(), "gw", nil)
	if err != nil {
		t.Fatal(err)
	}
	col := servertest.Collector(t, ts.OpAMPURL(), secret, "gw-1", "0.149.0", "site.type", "gw", "site.id", "001")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, out, _ := ts.cli("", "agents", "show", col.UID.String(), "-o", "json"); strings.Contains(out, `"syncState": "in_sync"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the collector never got in sync")
		}
		time.Sleep(50 * time.Millisecond)
	}
	uid := col.UID.String()
	// An agent that reported over plain HTTP long ago: offline.
	offline := uuid.New()
	if _, err := ts.Registry().Report(offline, store.Credential{Kind: "token", ID: "x"}, &protobufs.AgentToServer{}, false, false); err != nil {
		t.Fatal(err)
	}
	// An upstream release, signed with a test Sigstore, for catalog import.
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	rel := t.TempDir()
	archive := []byte("collector archive")
	os.WriteFile(filepath.Join(rel, "otelcol-contrib_0.150.0_linux_amd64.tar.gz"), archive, 0o644)
	os.WriteFile(filepath.Join(rel, "otelcol-contrib_0.150.0_linux_amd64.tar.gz.sigstore.json"),
		sigstoretest.Bundle(t, vs, sigstoretest.Identity, sigstoretest.Issuer, archive, time.Now()), 0o644)
	sigRoot := sigstoretest.RootFile(t, sigstoretest.Root(t, vs))
	// Made by earlier rows, used by later ones.
	vars := map[string]string{"{{uid}}": uid, "{{offline}}": offline.String(), "{{dir}}": t.TempDir()}
	cases := []cliCase{
		{args: []string{"agents", "list"}, out: uid},
		{args: []string{"agents", "show", "{{uid}}"}, out: "instanceUid"},
		{args: []string{"agents", "config", "{{uid}}"}, out: "receivers:"},
		{args: []string{"agents", "context", "{{uid}}"}, out: "site.type"},
		{args: []string{"agents", "retry-offer", "{{uid}}"}, out: "instanceUid"},
		{args: []string{"agents", "retry-config", "{{uid}}"}, out: "instanceUid"},
		{args: []string{"agents", "show", "00000000-0000-0000-0000-000000000000"}, code: 3, err: "404"},
		{args: []string{"agents", "forget", "{{uid}}"}, code: 3, err: "the agent is online"},
		{args: []string{"agents", "forget", "{{offline}}"}, out: "true"},
		{args: []string{"agents", "show", "{{offline}}"}, code: 3, err: "404"},
		{args: []string{"fleets", "list"}, out: "gw"},
		{args: []string{"fleets", "show", "gw"}, out: "data-flow/gateway"},
		{args: []string{"fleets", "show", "nosuch"}, code: 3, err: `no fleet "nosuch"`},
		{args: []string{"fleets", "variables", "gw"}, out: "VARIABLE"},
		{args: []string{"fleets", "pause", "gw"}, out: "gw"},
		{args: []string{"fleets", "resume", "gw"}, out: "gw"},
		{args: []string{"fleets", "retry-offers", "gw"}, code: 3, err: `no fleet "gw" with a package`},
		{args: []string{"fleets", "retry-configs", "gw"}, out: "retried"},
		{args: []string{"fleets", "pause", "nosuch"}, code: 3, err: "404"},
		{args: []string{"estate", "show"}, out: "revision"},
		{args: []string{"estate", "reload"}, out: "revision"},
		{args: []string{"estate", "plan"}, out: "1 collectors: 0 to change"},
		{args: []string{"tokens", "create", "--name", "edge", "--label", "wave=1"}, out: "myr_"},
		{args: []string{"tokens", "list"}, out: "wave=1"},
		{args: []string{"tokens", "revoke", "{{token}}"}, out: "edge"},
		{args: []string{"token", "list"}, out: "edge"},
		{args: []string{"users", "create", "--name", "ada", "--role", "operator", "--fleet", "gw"}, out: "ada"},
		{args: []string{"users", "list"}, out: "ada"},
		{args: []string{"users", "update", "ada", "--all-fleets"}, out: "ada"},
		{args: []string{"users", "delete", "ada"}, out: "ada"},
		{args: []string{"apikeys", "create", "--name", "ci", "--role", "viewer"}, out: "myrkey_"},
		{args: []string{"apikeys", "list"}, out: "ci"},
		{args: []string{"apikeys", "delete", "{{key}}"}, out: "{{key}}"},
		{args: []string{"audit", "list", "--action", "fleet.pause"}, out: "fleet.pause"},
		{args: []string{"audit", "--action", "fleet.resume"}, out: "fleet.resume"},
		{args: []string{"audit", "verify"}, out: "true"},
		{args: []string{"console", "link"}, out: "/login#token="},
		{args: []string{"pairings", "list"}, out: uid},
		{args: []string{"notifications", "deliveries"}, out: "WEBHOOK"},
		{args: []string{"whoami"}, out: "admin"},
		{args: []string{"summary"}, out: "collectorVersions"},
		// One instance is no cluster: the route is there with PostgreSQL.
		{args: []string{"cluster"}, code: 3, err: "404"},
		{args: []string{"ready"}, out: "true"},
		{args: []string{"openapi"}, out: "3.1.0"},
		{args: []string{"backup", "--out", "{{dir}}/b.tar.gz"}, out: "sqlite store"},
		{args: []string{"backup", "--out", "{{dir}}/b.tar.gz"}, code: 1, err: "--force replaces it"},
		{args: []string{"restore", "{{dir}}/b.tar.gz", "--data-dir", "{{dir}}/restored"}, out: "restored"},
		{args: []string{"catalog", "import", rel, "--estate", est, "--package", "otelcol-contrib", "--version", "0.150.0",
			"--identity", sigstoretest.Identity, "--issuer", sigstoretest.Issuer, "--trusted-root", sigRoot, "--without-sct"},
			out: "wrote packages/otelcol-contrib/0.150.0.yaml"},
		{args: []string{"catalog", "import", rel, "--estate", est, "--package", "otelcol-contrib", "--version", "0.150.0",
			"--identity", "https://example.com/other", "--issuer", sigstoretest.Issuer, "--trusted-root", sigRoot, "--without-sct", "--force"},
			code: 1, err: "expected SAN value"},
		{args: []string{"completion", "bash"}, out: "complete -o default -F _myriarchd_complete myriarchd"},
		{args: []string{"version"}, out: "myriarchd "},
		{args: []string{"help"}, out: "commands:"},
		{args: []string{"serve", "--help"}, out: "usage: myriarchd serve"},
	}
	ran := map[string]bool{}
	for _, tc := range cases {
		args := make([]string, len(tc.args))
		for i, a := range tc.args {
			for k, v := range vars {
				a = strings.ReplaceAll(a, k, v)
			}
			args[i] = a
		}
		name := strings.Join(args, " ")
		var code int
		var out, errs string
		if isClient(args) {
			code, out, errs = ts.cli("", args...)
		} else {
			code, out, errs = runCLI(args...)
		}
		want := tc.out
		for k, v := range vars {
			want = strings.ReplaceAll(want, k, v)
		}
		if code != tc.code || !strings.Contains(out, want) || !strings.Contains(errs, tc.err) {
			t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s\nwant %q / %q", name, code, tc.code, out, errs, want, tc.err)
			continue
		}
		ran[leafOf(args)] = true
		switch {
		case args[0] == "tokens" && args[1] == "create":
			vars["{{token}}"] = fieldOf(t, "id", out)
		case args[0] == "apikeys" && args[1] == "create":
			vars["{{key}}"] = fieldOf(t, "id", out)
		}
		if code == 0 && takesOutput(args) && !mutates(args) {
			for _, f := range []string{"json", "yaml"} {
				c, o, e := ts.cli("", append(args, "-o", f)...)
				var v any
				err := json.Unmarshal([]byte(o), &v)
				switch {
				case f == "yaml":
					err = yaml.Unmarshal([]byte(o), &v)
				case leafOf(args) == "audit" || leafOf(args) == "audit list":
					// JSON lines: one record per line.
					for _, l := range strings.Split(strings.TrimSpace(o), "\n") {
						if err = json.Unmarshal([]byte(l), &v); err != nil {
							break
						}
					}
				}
				if c != 0 || err != nil || v == nil {
					t.Errorf("%s -o %s: exit %d, %v\n%s%s", name, f, c, err, o, e)
				}
			}
		}
	}
	for _, g := range program().Groups {
		if g.Name == "token" { // tokens' other name
			continue
		}
		for _, l := range append(append([]*cmdline.Leaf(nil), g.Leaves...), g.Default) {
			if l == nil {
				continue
			}
			if p := strings.TrimSpace(g.Name + " " + l.Name); !ran[p] && !ran[g.Name] {
				t.Errorf("%q is not run by the test", p)
			}
		}
	}
}

// isClient reports whether a command line talks to the server (and takes
// the connection flags).
func isClient(args []string) bool {
	switch args[0] {
	case "restore", "completion", "version", "help", "serve", "catalog":
		return false
	}
	return true
}

// leafOf names the leaf a command line ran: "agents list", "audit" for
// the audit group's default, "whoami".
func leafOf(args []string) string {
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		for _, g := range program().Groups {
			if g.Name != args[0] {
				continue
			}
			for _, l := range g.Leaves {
				if l.Name == args[1] {
					return args[0] + " " + args[1]
				}
			}
		}
	}
	return args[0]
}

func takesOutput(args []string) bool {
	c := cmdline.New("myriarchd", "x", "", "")
	for _, g := range program().Groups {
		if g.Name != args[0] {
			continue
		}
		l := g.Default
		if len(args) > 1 {
			for _, x := range g.Leaves {
				if x.Name == args[1] {
					l = x
				}
			}
		}
		if l == nil || l.Setup == nil {
			return false
		}
		l.Setup(c)
		return c.FS.Lookup("output") != nil
	}
	return false
}

// mutates reports whether running a command line again would change or
// fail what the case checked: the changes, and the one-time link.
func mutates(args []string) bool {
	for _, w := range []string{"create", "revoke", "delete", "update", "link", "pause", "resume", "reload", "retry-offers", "retry-configs", "forget"} {
		if len(args) > 1 && args[1] == w {
			return true
		}
	}
	return false
}

// fieldOf reads a field of a table's "name  value" lines.
func fieldOf(t *testing.T, field, table string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == field {
			return f[1]
		}
	}
	t.Fatalf("no %s in\n%s", field, table)
	return ""
}
