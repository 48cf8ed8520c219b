package estate

import (
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	goversion "github.com/hashicorp/go-version"
	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/server/tokens"
)

// Fleets name packages of the catalog; webhooks name fleets.
func init() { extensions = append(extensions, loadPackages, loadFleets, loadNotifications) }

// Fleet assigns a target version of a package to the collectors its selector matches.
type Fleet struct {
	Name          string            `yaml:"name"`
	Priority      int               `yaml:"priority"`
	Selector      map[string]string `yaml:"selector"`
	Package       string            `yaml:"package"`
	TargetVersion string            `yaml:"targetVersion"`
	Rollout       *Rollout          `yaml:"rollout"`
	// Config, when set, configures the fleet's collectors from a Blueprint.
	Config *FleetConfig `yaml:"config"`
	// OfflineAfter, when set, is how long a collector of the fleet may be
	// offline before it counts as offline (agent_offline notifications,
	// the myriarch_agents_offline gauge).
	OfflineAfter time.Duration `yaml:"offlineAfter"`
	// Telemetry, when set, is where the fleet's collectors and updaters
	// send their own telemetry.
	Telemetry *Telemetry `yaml:"telemetry"`
	File      string     `yaml:"-"`
	Line      int        `yaml:"-"`
}

// MinOfflineAfter is the shortest offlineAfter a fleet may set.
const MinOfflineAfter = time.Second

// Rollout orders a fleet's agents into waves.
type Rollout struct {
	WaveLabel   string   `yaml:"waveLabel"`
	Waves       []string `yaml:"waves"`
	MaxFailures int      `yaml:"maxFailures"`
}

// Matches reports whether every selector entry equals the attribute view's value.
func (f *Fleet) Matches(view attributes.View) bool {
	for k, v := range f.Selector {
		if got, ok := view.Get(k); !ok || got != v {
			return false
		}
	}
	return true
}

// WaveOf returns the wave index of an agent's view: its position in Waves,
// or len(Waves) (last) when it has no such label or an unlisted value.
func (f *Fleet) WaveOf(view attributes.View) int {
	if f.Rollout == nil || len(f.Rollout.Waves) == 0 {
		return 0
	}
	v, ok := view.Get(attributes.LabelPrefix + f.Rollout.WaveLabel)
	if ok {
		for i, w := range f.Rollout.Waves {
			if w == v {
				return i
			}
		}
	}
	return len(f.Rollout.Waves)
}

func loadFleets(ps *problems, e *Estate) {
	byName := map[string]string{}
	for _, path := range yamlFiles(ps, filepath.Join(e.Dir, "fleets")) {
		fp, root, ok := decodeMapping[Fleet](ps, path, "a fleet file is a mapping (name, priority, selector, package, targetVersion, rollout, config)")
		if !ok {
			continue
		}
		f := *fp
		f.File, f.Line = path, root.Line
		line := func(key string) int { return keyLine(root, key) }
		bad := len(ps.list)
		switch {
		case f.Name == "":
			ps.add(path, root.Line, "name is required")
		case byName[f.Name] != "":
			ps.add(path, line("name"), "fleet %q is already defined in %s", f.Name, byName[f.Name])
		default:
			byName[f.Name] = path
		}
		for _, k := range sortedKeys(f.Selector) {
			if why := impossibleKey(k); why != "" {
				ps.add(path, line("selector"), "selector key %q can never exist: %s", k, why)
			}
		}
		if f.Config != nil {
			checkFleetConfig(ps, e, path, line("config"), f.Config)
		}
		switch {
		case f.Package == "" && f.TargetVersion == "" && (f.Config != nil || f.Telemetry != nil):
			// A fleet that only configures its collectors, or directs their telemetry.
		case f.Package == "":
			ps.add(path, root.Line, "package is required (or config, for a fleet that only configures, or telemetry)")
		}
		if f.TargetVersion == "" {
			if f.Package != "" {
				ps.add(path, root.Line, "targetVersion is required")
			}
		} else if _, err := goversion.NewVersion(f.TargetVersion); err != nil {
			ps.add(path, line("targetVersion"), "targetVersion %q is not a version: %v", f.TargetVersion, err)
		} else if f.Package != "" {
			if _, ok := e.Packages[f.Package]; !ok {
				ps.add(path, line("package"), "package %q is not in the catalog (packages/%s/)", f.Package, f.Package)
			} else if e.Package(f.Package, f.TargetVersion) == nil {
				ps.add(path, line("targetVersion"), "package %q has no version %s in the catalog", f.Package, f.TargetVersion)
			}
		}
		if r := f.Rollout; r != nil {
			rl := line("rollout")
			if r.WaveLabel == "" && len(r.Waves) > 0 {
				ps.add(path, rl, "rollout.waveLabel is required with rollout.waves")
			}
			if r.WaveLabel != "" && tokens.ValidateLabels(map[string]string{r.WaveLabel: ""}) != nil {
				ps.add(path, rl, "rollout.waveLabel %q is not a valid label key", r.WaveLabel)
			}
			seen := map[string]bool{}
			for _, w := range r.Waves {
				if seen[w] {
					ps.add(path, rl, "rollout.waves lists %q twice", w)
				}
				seen[w] = true
			}
			if r.MaxFailures < 0 {
				ps.add(path, rl, "rollout.maxFailures must be 0 or more")
			}
		}
		if f.Telemetry != nil {
			checkTelemetry(ps, path, line("telemetry"), f.Telemetry)
		}
		if f.OfflineAfter != 0 && f.OfflineAfter < MinOfflineAfter {
			ps.add(path, line("offlineAfter"), "offlineAfter %s is shorter than %s (a missed heartbeat is not an outage)", f.OfflineAfter, MinOfflineAfter)
		}
		if len(ps.list) == bad {
			e.Fleets = append(e.Fleets, f)
		}
	}
	sort.Slice(e.Fleets, func(i, j int) bool { return e.Fleets[i].Name < e.Fleets[j].Name })
}

// impossibleKey explains why no attribute view can contain k, or returns "".
func impossibleKey(k string) string {
	switch {
	case k == "":
		return "empty key"
	case !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0:
		return "keys are cleaned to valid UTF-8 without NUL bytes"
	case len(k) > attributes.MaxLen:
		return "keys are cut at 4096 bytes"
	}
	if label, ok := strings.CutPrefix(k, attributes.LabelPrefix); ok {
		if label == "" || strings.IndexFunc(label, unicode.IsSpace) >= 0 || strings.Contains(label, "=") ||
			utf8.RuneCountInString(label) > tokens.MaxLabelKeyLen {
			return "not a valid label key (1–63 characters, no whitespace, no '=')"
		}
	}
	return ""
}

// keyLine finds the line of a top-level key in a mapping node.
func keyLine(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return m.Line
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
