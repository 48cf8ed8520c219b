package server_test

import (
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/configs"
)

// A Blueprint with a receiver reading a variable the collector lacks, and
// one that always renders.
const warningBlueprint = `name: gw
version: 1
owner: data-flow-owners
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
  - name: app
    class: receiver
    type: filelog
    version: 1
    config:
      include: ["${site.logdir}/app.log"]
  - name: out
    class: exporter
    type: debug
    version: 1
pipelines:
  logs:
    - component: in
    - component: app
    - component: out
`

// Nothing is dropped silently: a receiver left out for a missing variable
// is a warning on the assignment, an event, a count in the summary and
// /metrics, and a filter; a configuration that would lose every receiver
// is a render error and the collector keeps what it has.
func TestConfigWarnings(t *testing.T) {
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", warningBlueprint)
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	col := ts.startConfigCollector(ts.createToken("edge", nil).Token, "s1")
	a := ts.waitAgent(col.uid, "in sync with a warning", func(a admin.Agent) bool {
		as := assignmentOf(t, a)
		return as.SyncState == configs.SyncInSync && len(as.Warnings) == 1
	})
	w := assignmentOf(t, a).Warnings[0]
	if w.Kind != "receiver_dropped" || w.Component != "filelog/app" || w.Variable != "${site.logdir}" || w.Source != "app" {
		t.Fatalf("warning %+v", w)
	}
	if ev, ok := hasEvent(a, "config_warning"); !ok || !strings.Contains(ev.Message, "filelog/app") {
		t.Fatalf("no config_warning event: %+v", a.Events)
	}
	_, body := ts.api("GET", "/api/v1/summary", nil)
	if !strings.Contains(string(body), `"collectors": 1`) {
		t.Fatalf("summary: %s", body)
	}
	_, body = ts.api("GET", "/metrics", nil)
	if !strings.Contains(string(body), `myriarchd_config_warnings{kind="receiver_dropped"} 1`) {
		t.Fatalf("metrics lack the warning")
	}
	if got := ts.listUIDsQuery("configWarnings=true"); len(got) != 1 || got[0] != col.uid.String() {
		t.Fatalf("configWarnings=true lists %v", got)
	}
	if got := ts.listUIDsQuery("configWarnings=false"); len(got) != 0 {
		t.Fatalf("configWarnings=false lists %v", got)
	}
	before := assignmentOf(t, a).Assigned

	// Every receiver dropped: a render error, the previous configuration kept.
	est.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(strings.Replace(warningBlueprint, "    - component: in\n", "", 1),
		"  - name: in\n    class: receiver\n    type: otlp\n    version: 1\n", "", 1))
	if code, body := ts.api("POST", "/api/v1/estate/reload", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	a = ts.waitAgent(col.uid, "the render error", func(a admin.Agent) bool {
		return strings.Contains(deref(assignmentOf(t, a).Error), "every pipeline lost its receivers")
	})
	if as := assignmentOf(t, a); deref(as.Assigned) != deref(before) || deref(as.Desired) != deref(before) {
		t.Fatalf("a configuration collecting nothing was assigned: %+v", as)
	}
}

// A configuration's error and a package offer's are kept apart: the render
// error in assignment.error, the offer's problem on the offer.
func TestRenderAndOfferErrorsApart(t *testing.T) {
	est := newEstate(t)
	est.addVersion("0.149.0")
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(configBlueprint, "${site.id}", "${site.missing}", 1))
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\npackage: "+pkgName+"\ntargetVersion: 0.149.0\nconfig:\n  blueprint: data-flow/gw\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	col := ts.startConfigCollector(ts.createToken("edge", nil).Token, "s1", "nightly")
	a := ts.waitAgent(col.uid, "both errors", func(a admin.Agent) bool {
		o, _ := a.Offer.(map[string]any)
		return assignmentOf(t, a).Error != nil && o != nil
	})
	if e := deref(assignmentOf(t, a).Error); !strings.Contains(e, "${site.missing}") || strings.Contains(e, "targetVersion") {
		t.Fatalf("assignment.error %q", e)
	}
	o := a.Offer.(map[string]any)
	if o["state"] != "not_offered" || !strings.Contains(o["error"].(string), `service.version "nightly", which is not a version`) {
		t.Fatalf("offer %+v", o)
	}
}

// Names are checked when the estate loads: a provider no context has is a
// finding of GET /api/v1/estate, kubernetes named as unsupported.
func TestEstateFindsUnknownProviders(t *testing.T) {
	est := newEstate(t)
	est.mkdir("teams/data-flow/blueprints")
	est.write("teams/data-flow/blueprints/gw.yaml", strings.Replace(configBlueprint, "${site.id}", "${dockr.container.id}-${kubernetes.pod.name|site.id}", 1))
	est.write("fleets/edge.yaml", "name: edge\nselector: {site.type: edge}\nconfig:\n  blueprint: data-flow/gw\n")
	ts := startServer(t, func(o *server.Options) { o.Estate = est.dir })
	var st struct {
		Findings []struct{ Kind, Blueprint, Message string }
	}
	ts.getJSON("/api/v1/estate", &st)
	var msgs []string
	for _, f := range st.Findings {
		if f.Kind == "variable" && f.Blueprint == "data-flow/gw" {
			msgs = append(msgs, f.Message)
		}
	}
	all := strings.Join(msgs, "\n")
	if len(msgs) != 2 || !strings.Contains(all, `"dockr" is not a provider myriarch knows`) || !strings.Contains(all, "kubernetes provider is not supported by myriarch-updater") {
		t.Fatalf("findings %q", msgs)
	}
}
