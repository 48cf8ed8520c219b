package providers

import (
	"context"
	"runtime/debug"
	"strings"

	"github.com/myriarch/myriarch/internal/buildinfo"
)

// agentProvider publishes the agent's identity and version.
type agentProvider struct{ id string }

var _ ContextProvider = (*agentProvider)(nil)

func (a *agentProvider) Name() string { return "agent" }

func (a *agentProvider) Run(ctx context.Context, set func(map[string]any)) error {
	set(agentData(a.id, buildinfo.Version))
	<-ctx.Done()
	return nil
}

// agentData builds {id, version: {version, commit, build_time, snapshot}}.
// Commit and build time come from the VCS stamp Go embeds (empty when built
// with -buildvcs=false); a version with a pre-release part ("-dev",
// "-SNAPSHOT") is a snapshot.
func agentData(id, version string) map[string]any {
	var commit, built string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				built = s.Value
			}
		}
	}
	core, _, _ := strings.Cut(version, "+")
	return map[string]any{
		"id": id,
		"version": map[string]any{
			"version":    version,
			"commit":     commit,
			"build_time": built,
			"snapshot":   strings.Contains(core, "-"),
		},
	}
}
