package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/internal/configrender"
	"github.com/myriarch/myriarch/server/configs"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/registry"
)

func fleets(target string, withConfig bool, names ...string) *estate.Estate {
	e := &estate.Estate{Revision: "rev-" + target}
	for _, n := range names {
		f := estate.Fleet{Name: n, Selector: map[string]string{"site.type": n}, Package: "otelcol-contrib", TargetVersion: target}
		if withConfig {
			f.Config = &estate.FleetConfig{Blueprint: "team/" + n}
		}
		e.Fleets = append(e.Fleets, f)
	}
	return e
}

func member(t *testing.T, i int, typ string) configs.Planned {
	t.Helper()
	v := attributes.ViewOf(map[string]string{"site.type": typ, "host.name": fmt.Sprint("h", i)})
	return configs.Planned{UID: uuid.New(), Kind: registry.KindCollector, View: v}
}

// Build groups what the engine planned: changes per fleet with one diff
// per distinct body (the most shared first), new warnings only, render
// errors that change nothing, collectors leaving every fleet, and target
// versions moving, from the most common one.
func TestBuild(t *testing.T) {
	cur := fleets("0.149.0", true, "edge", "core")
	cand := fleets("0.150.0", true, "edge")
	cand.Fleets = append(cand.Fleets, estate.Fleet{Name: "lab", Selector: map[string]string{"site.type": "lab"}})
	old := []byte("a: 1\nb: 2\n")
	w := configrender.Warning{Kind: configrender.WarningReceiverDropped, Component: "otlp/tap", Variable: "${x}", Source: "tap"}
	var planned []configs.Planned
	// Three edge collectors move to one body, one to another.
	for i := range 3 {
		p := member(t, i, "edge")
		p.Assigned, p.AssignedBody, p.Fleet, p.Hash, p.Body = "old", old, "edge", "new1", []byte("a: 1\nb: 3\n")
		planned = append(planned, p)
	}
	p := member(t, 3, "edge")
	p.Assigned, p.AssignedBody, p.Fleet, p.Hash, p.Body = "old", old, "edge", "new2", []byte("a: 9\nb: 2\n")
	planned = append(planned, p)
	// Unchanged, with a warning it has already: nothing to say.
	p = member(t, 4, "edge")
	p.Assigned, p.Fleet, p.Hash, p.Warnings, p.NextWarnings = "same", "edge", "same", []configrender.Warning{w}, []configrender.Warning{w}
	planned = append(planned, p)
	// Unchanged, with a new warning.
	p = member(t, 5, "edge")
	p.Assigned, p.Fleet, p.Hash, p.NextWarnings = "same", "edge", "same", []configrender.Warning{w}
	planned = append(planned, p)
	// A render error: it keeps its configuration.
	p = member(t, 6, "edge")
	p.Assigned, p.Fleet, p.NextErr = "same", "edge", "blueprint team/edge: ${y} is not in the context"
	planned = append(planned, p)
	// Core is gone from the candidate: its collector loses its configuration.
	p = member(t, 7, "core")
	p.Assigned = "corecfg"
	planned = append(planned, p)
	// A body held on another instance: no diff, said so.
	p = member(t, 8, "edge")
	p.Assigned, p.Fleet, p.Hash, p.Body = "elsewhere", "edge", "new3", []byte("c: 1\n")
	planned = append(planned, p)

	got := Build(cur, cand, "git", planned)
	if !got.OK || got.Current.Revision != "rev-0.149.0" || got.Candidate.Revision != "rev-0.150.0" || got.Source != "git" {
		t.Fatalf("plan %+v", got)
	}
	want := Summary{Collectors: 9, Changed: 6, Warnings: 1, RenderErrors: 1, VersionChanges: 9} // 8 in edge, and core's leaving
	if got.Summary != want {
		t.Fatalf("summary %+v, want %+v", got.Summary, want)
	}
	if len(got.Unassigned) != 1 || got.Unassigned[0] != planned[7].UID {
		t.Fatalf("unassigned %v", got.Unassigned)
	}
	if len(got.Fleets) != 2 || got.Fleets[0].Name != "edge" || got.Fleets[1].Name != "lab" || got.Fleets[1].Collectors != 0 {
		t.Fatalf("fleets %+v", got.Fleets)
	}
	edge := got.Fleets[0]
	if edge.Collectors != 8 || len(edge.Changed) != 5 || len(edge.Warnings) != 1 || edge.Warnings[0].Agent != planned[5].UID ||
		len(edge.Errors) != 1 || edge.Errors[0].Agent != planned[6].UID || edge.Blueprint != "team/edge" {
		t.Fatalf("edge %+v", edge)
	}
	if v := edge.Version; v == nil || *v != (VersionChange{From: "0.149.0", To: "0.150.0", Collectors: 8}) {
		t.Fatalf("version %+v", v)
	}
	if len(edge.Bodies) != 3 {
		t.Fatalf("bodies %+v", edge.Bodies)
	}
	b := edge.Bodies[0]
	if b.Hash != "new1" || b.Collectors != 3 || b.Representative != planned[0].UID || b.From != "old" ||
		!strings.Contains(b.Diff, "@@ -1,2 +1,2 @@\n a: 1\n-b: 2\n+b: 3\n") {
		t.Fatalf("first body %+v", b)
	}
	if b := edge.Bodies[2]; b.Hash != "new3" || b.Diff != "" || b.DiffOmitted != "current body not held" {
		t.Fatalf("a body without its current one %+v", b)
	}
}

// Past MaxDiffs distinct bodies, the rest are counted, not diffed.
func TestBuildBoundsDiffs(t *testing.T) {
	cur := fleets("1.0.0", true, "edge")
	var planned []configs.Planned
	for i := range MaxDiffs + 5 {
		p := member(t, i, "edge")
		p.Assigned, p.AssignedBody, p.Fleet, p.Hash, p.Body = "old", []byte("x: 0\n"), "edge", fmt.Sprint("h", i), []byte(fmt.Sprintf("x: %d\n", i+1))
		planned = append(planned, p)
	}
	got := Build(cur, cur, "directory", planned)
	edge := got.Fleets[0]
	if len(edge.Bodies) != MaxDiffs || edge.BodiesWithoutDiff != 5 || got.Summary.Changed != MaxDiffs+5 || got.Summary.VersionChanges != 0 || edge.Version != nil {
		t.Fatalf("%d bodies, %d without a diff, %+v", len(edge.Bodies), edge.BodiesWithoutDiff, got.Summary)
	}
}

// A candidate that does not load: its problems, nothing else, never null.
func TestFailed(t *testing.T) {
	p := Failed(Revision{Revision: "a"}, Revision{Revision: "b"}, "directory", []estate.Problem{{File: "fleets/x.yaml", Line: 1, Message: "bad"}})
	if p.OK || len(p.Errors) != 1 || p.Fleets == nil || p.Findings == nil || p.Unassigned == nil {
		t.Fatalf("%+v", p)
	}
}
