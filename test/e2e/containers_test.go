package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

// containersBlueprint reads one container log per mapping of the docker
// provider and tags the records with the updater's local tier.
const containersBlueprint = `name: containers
version: 1
owner: data-flow-owners
components:
  - name: logs
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${docker.paths.log}"]
      start_at: beginning
  - name: tier
    class: processor
    type: resource
    version: 1
    config:
      attributes:
        - key: tier
          value: ${local.tier|'none'}
          action: upsert
  - name: out
    class: exporter
    type: otlphttp
    version: 1
    config:
      endpoint: http://%s/sites/${site.id}
      compression: none
      encoding: json
pipelines:
  logs:
    - component: logs
    - component: tier
    - component: out
`

// The collector's configuration follows the containers of its host: one
// filelog receiver per running container, each container's records tagged
// with its own name; a stopped container's receiver goes; a change of the
// updater's providers re-renders; environment variables it does not allow
// never reach the server.
func TestConfigurationFollowsContainers(t *testing.T) {
	t.Parallel()
	// The updater follows every container on the engine: no other test's
	// containers may come and go meanwhile.
	cli := testenv.DockerAlone(t)
	ctx := context.Background()
	image := "myriarch-e2e-logger:1"
	if err := site.RemoveLoggers(ctx, cli); err != nil {
		t.Fatal(err)
	}
	if err := site.LoadLoggerImage(ctx, cli, image); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	var err error
	if e.sink, err = site.StartSink(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.sink.Close() })
	if err := site.WriteFile(e.estate, "teams/data-flow/blueprints/containers.yaml", fmt.Sprintf(containersBlueprint, e.sink.Addr)); err != nil {
		t.Fatal(err)
	}
	e.config = "config:\n  blueprint: data-flow/containers\n"
	e.setTarget(peerbuild.VersionM1)
	e.providers = map[string]any{
		"docker": map[string]any{"host": os.Getenv("DOCKER_HOST")},
		"local":  map[string]any{"vars": map[string]any{"tier": "gold"}},
		"env":    map[string]any{"allow": []string{"MYRIARCH_E2E_ALLOWED"}},
	}
	e.updaterEnv = []string{"MYRIARCH_E2E_ALLOWED=shared", "MYRIARCH_E2E_SECRET=must-not-leave"}
	e.install(peerbuild.VersionM1)
	e.waitCollector("linked", 2*time.Minute, func(a site.Agent) bool { return a.Pairing.State == "linked" })

	names := []string{fmt.Sprintf("e2e-web-%d", time.Now().UnixNano()%1e6), fmt.Sprintf("e2e-db-%d", time.Now().UnixNano()%1e6)}
	ids := map[string]string{}
	start := time.Now()
	for _, n := range names {
		id, err := site.RunLogger(ctx, cli, image, n, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = id
		t.Cleanup(func() { site.RemoveContainer(context.Background(), cli, id) })
	}
	// The server learns of both containers (the updater reports on change).
	var firstSeen time.Duration
	e.waitContext(30*time.Second, "both containers in the render context", func(doc contextDoc) bool {
		own := doc.mappingsOf("docker", ids)
		if own >= 1 && firstSeen == 0 {
			firstSeen = time.Since(start)
		}
		return own == 2
	})
	t.Logf("containers started → the server has the first container's mapping: %v", firstSeen)

	col := e.waitCollector("in sync with both receivers", 2*time.Minute, func(a site.Agent) bool {
		return a.Assignment.SyncState == "in_sync" && site.Str(a.Assignment.Context) == "attributes+updater"
	})
	_ = col
	effective := e.waitEffective(time.Minute, "two receiver copies", func(cfg string) bool {
		return strings.Count(cfg, "filelog/logs-") >= 2 && strings.Contains(cfg, "filelog/logs-"+ids[names[0]]) && strings.Contains(cfg, "filelog/logs-"+ids[names[1]])
	})
	_ = effective
	// Each container's records arrive tagged with its own name.
	for _, n := range names {
		testkit.WaitWithin(t, 90*time.Second, "records of "+n, func() bool {
			for _, r := range e.sink.Records(siteAttrs["site.id"]) {
				if strings.Contains(r.Body, "hello-from-"+n) {
					if r.Resource["container.name"] != n || r.Resource["tier"] != "gold" {
						t.Fatalf("a record of %s tagged %v", n, r.Resource)
					}
					return true
				}
			}
			return false
		})
	}

	// A receiver whose variable no container has: each copy is dropped
	// with a warning on the assignment and an event — the rest still
	// applies, and the collector is not shown fine in silence.
	extra := strings.Replace(fmt.Sprintf(containersBlueprint, e.sink.Addr), "  - name: tier\n", `  - name: extra
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${docker.labels.e2e.extra_log}"]
  - name: tier
`, 1)
	extra = strings.Replace(extra, "    - component: logs\n", "    - component: logs\n    - component: extra\n", 1)
	if err := site.WriteFile(e.estate, "teams/data-flow/blueprints/containers.yaml", extra); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	warned := e.waitCollector("a warning per container", time.Minute, func(a site.Agent) bool {
		return len(a.Assignment.Warnings) == 2 && a.HasEvent("config_warning")
	})
	for _, w := range warned.Assignment.Warnings {
		if w.Kind != "receiver_dropped" || w.Variable != "${docker.labels.e2e.extra_log}" || w.Source != "extra" ||
			!strings.HasPrefix(w.Component, "filelog/extra-") {
			t.Fatalf("warning %+v", w)
		}
	}
	e.waitCollector("in sync without the dropped receivers", time.Minute, func(a site.Agent) bool {
		return a.Assignment.SyncState == "in_sync" && len(a.Assignment.Warnings) == 2
	})
	e.waitEffective(time.Minute, "both logs receivers, no extra one", func(cfg string) bool {
		return strings.Contains(cfg, "filelog/logs-"+ids[names[0]]) && strings.Contains(cfg, "filelog/logs-"+ids[names[1]]) && !strings.Contains(cfg, "filelog/extra")
	})

	// One container stops: its receiver goes.
	if err := site.RemoveContainer(ctx, cli, ids[names[1]]); err != nil {
		t.Fatal(err)
	}
	e.waitEffective(90*time.Second, "one receiver copy left", func(cfg string) bool {
		return strings.Contains(cfg, "filelog/logs-"+ids[names[0]]) && !strings.Contains(cfg, "filelog/logs-"+ids[names[1]])
	})

	// The updater's providers change (a new local tier): the collector is re-rendered.
	if err := e.updater.Stop(30 * time.Second); err != nil {
		// Killed, it would leave its Supervisor running beside the next one.
		t.Fatalf("stopping the updater: %v", err)
	}
	e.providers["local"] = map[string]any{"vars": map[string]any{"tier": "silver"}}
	if err := e.site.RewriteUpdaterProviders(e.providers); err != nil {
		t.Fatal(err)
	}
	e.startUpdater(e.updaterEnv)
	e.waitEffective(2*time.Minute, "the new tier", func(cfg string) bool { return strings.Contains(cfg, "silver") })

	// What the server stored never held a variable the updater does not allow.
	doc := e.waitContext(10*time.Second, "the context", func(contextDoc) bool { return true })
	raw, _ := json.Marshal(doc)
	if strings.Contains(string(raw), "MYRIARCH_E2E_SECRET") || strings.Contains(string(raw), "must-not-leave") ||
		doc.Context["env.MYRIARCH_E2E_ALLOWED"] != "shared" {
		t.Fatalf("render context %s", raw)
	}
}

type contextDoc struct {
	Context map[string]string `json:"context"`
	Dynamic map[string][]struct {
		ID string `json:"id"`
	} `json:"dynamic"`
	Source string `json:"source"`
}

// mappingsOf counts the provider's mappings of the containers in ids (by
// name): the engine may hold containers of other tests or runs.
func (doc contextDoc) mappingsOf(provider string, ids map[string]string) int {
	n := 0
	for _, m := range doc.Dynamic[provider] {
		for _, id := range ids {
			if m.ID == id {
				n++
			}
		}
	}
	return n
}

// waitContext polls the collector's render context until cond holds.
func (e *env) waitContext(timeout time.Duration, what string, cond func(contextDoc) bool) contextDoc {
	e.t.Helper()
	var doc contextDoc
	testkit.WaitWithin(e.t, timeout, what, func() bool {
		doc = contextDoc{}
		code, err := e.srv.API("GET", "/api/v1/agents/"+e.colUID+"/context", nil, &doc)
		return err == nil && code == 200 && cond(doc)
	})
	return doc
}

// waitEffective polls the Supervisor's effective configuration on disk.
func (e *env) waitEffective(timeout time.Duration, what string, cond func(string) bool) string {
	e.t.Helper()
	var cfg string
	if !testkit.Poll(timeout, func() bool {
		data, err := os.ReadFile(filepath.Join(e.site.StorageDir, "effective.yaml"))
		cfg = string(data)
		return err == nil && cond(cfg)
	}) {
		// What the server made of the collector and its updater meanwhile:
		// the render context it holds first, then each agent with its
		// newest events (the output of a failed run is read in part).
		var seen []string
		var doc contextDoc
		if code, err := e.srv.API("GET", "/api/v1/agents/"+e.colUID+"/context", nil, &doc); err == nil && code == 200 {
			b, _ := json.Marshal(doc.Context)
			seen = append(seen, "render context: "+string(b))
		}
		if code, body, err := e.srv.Text("/api/v1/agents/" + e.colUID + "/config"); err == nil && code == 200 {
			seen = append(seen, "desired configuration:\n"+body)
		}
		for uid := &e.colUID; uid != nil; {
			a, ok, err := e.srv.GetAgent(*uid)
			if err != nil || !ok {
				break
			}
			if n := len(a.Events); n > 12 {
				a.Events = a.Events[n-12:]
			}
			b, _ := json.MarshalIndent(a, "", "  ")
			seen = append(seen, string(b))
			if uid = a.Pairing.Updater; a.Kind != "collector" {
				uid = nil // the updater, after its collector
			}
		}
		e.t.Fatalf("timed out after %s waiting for %s in the effective configuration; the server's view:\n%s", timeout, what, strings.Join(seen, "\n"))
	}
	return cfg
}
