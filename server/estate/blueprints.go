package estate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/myriarch/myriarch/internal/blueprint"
)

// FleetConfig names the Blueprint a fleet's collectors are configured with.
type FleetConfig struct {
	// Blueprint is a team-qualified Blueprint id, <team>/<name>, as the Blueprint file format names them.
	Blueprint string `yaml:"blueprint"`
	// Bridges opts the fleet's OpAMP Bridges in: without it a Bridge gets
	// no configuration (sync state none).
	Bridges bool `yaml:"bridges"`
}

// loadBlueprints loads the Blueprint tree (teams/…) of the estate with the
// same loader and errors as blueprint-check; an estate without teams/ has
// no Blueprints.
func loadBlueprints(ps *problems, e *Estate) {
	if _, err := os.Stat(filepath.Join(e.Dir, "teams")); errors.Is(err, os.ErrNotExist) {
		return
	}
	est, err := blueprint.Load(e.Dir)
	if err == nil {
		e.Blueprints = est
		e.Findings = est.Judge()
		return
	}
	var les blueprint.LoadErrors
	if !errors.As(err, &les) {
		ps.add(filepath.Join(e.Dir, "teams"), 0, "%v", err)
		return
	}
	for _, le := range les {
		ps.add(le.File, le.Line, "%s", le.Message)
	}
}

// checkFleetConfig checks a fleet's config key against the loaded Blueprints.
func checkFleetConfig(ps *problems, e *Estate, path string, line int, c *FleetConfig) {
	id := c.Blueprint
	team, name, ok := strings.Cut(id, "/")
	switch {
	case id == "":
		ps.add(path, line, "config.blueprint is required: a team-qualified Blueprint id, <team>/<name>")
	case !ok || team == "" || name == "" || strings.Contains(name, "/"):
		ps.add(path, line, "config.blueprint %q is not a Blueprint id: write <team>/<name>", id)
	case e.Blueprints == nil:
		ps.add(path, line, "config.blueprint %q: the estate has no Blueprints (no teams/ tree)", id)
	case e.Blueprints.Blueprints[id] == nil:
		ps.add(path, line, "config.blueprint %q does not exist (teams/%s/blueprints/%s.yaml)", id, team, name)
	}
}
