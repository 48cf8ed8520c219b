package blueprint

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestFindings loads one estate per finding kind in testdata/findings and
// compares the findings with want.json. Every case also holds a clean
// Blueprint of another team, which must stay free of findings.
func TestFindings(t *testing.T) {
	for _, name := range caseDirs(t, "findings") {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "findings", name)
			est, err := Load(caseRoots(t, dir)...)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			fs := est.Judge()
			for _, f := range fs {
				if f.Blueprint == "c/clean" {
					t.Errorf("finding about another team's clean Blueprint: %v", f)
				}
				if f.Owner != est.Blueprints[f.Blueprint].Owner {
					t.Errorf("finding routed to %q, want the Blueprint's owner: %v", f.Owner, f)
				}
			}
			if fs == nil {
				fs = []Finding{}
			}
			got, err := json.MarshalIndent(fs, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "want.json"), append(got, '\n'))
		})
	}
}
