package modes

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/install/binary"
	ctr "github.com/myriarch/myriarch/agent/install/container"
	"github.com/myriarch/myriarch/agent/mode"
	"github.com/myriarch/myriarch/agent/mode/containermode/fakedocker"
)

func TestModesAreTheConfigModes(t *testing.T) {
	if got, want := Names(), config.Modes(); !slices.Equal(got, want) {
		t.Errorf("modes with an implementation %v, modes updater.yaml accepts %v", got, want)
	}
}

func TestLookupUnknownMode(t *testing.T) {
	for _, name := range []string{"vm", "", "Binary"} {
		_, err := Lookup(name)
		if err == nil {
			t.Fatalf("Lookup(%q) succeeded", name)
		}
		for _, want := range []string{`unknown collector mode "` + name + `"`, "binary", "container"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Lookup(%q) = %v, want it to name %q", name, err, want)
			}
		}
		cfg := config.NewDefaultConfig()
		cfg.Mode = name
		if rt, err := For(cfg, nil); err == nil || rt != nil {
			t.Errorf("For(mode %q) = %v, %v", name, rt, err)
		}
	}
}

func TestModes(t *testing.T) {
	docker := fakedocker.Serve(t, map[string]fakedocker.Container{
		"otelcol": {Ref: "otel/opentelemetry-collector-contrib:0.149.0"},
	})
	tests := []struct {
		name      string
		configure func(*config.Config)
		state     string // the installed record's name
		prefix    string
		attrs     map[string]string
		// supervised: the mode controls a supervisor; running: the attributes
		// of a look-up of what runs (nil: the mode does not look).
		supervised bool
		running    map[string]string
	}{
		{
			name:  "binary, service control",
			state: binary.InstalledFile, configure: func(c *config.Config) {},
			attrs: map[string]string{mode.AttrSupervisorService: "opampsupervisor"}, supervised: true,
		},
		{
			name: "binary, process control",
			configure: func(c *config.Config) {
				c.Supervisor.Control, c.Supervisor.Command = config.ControlProcess, []string{"/usr/local/bin/opampsupervisor", "--config", "x"}
			},
			state: binary.InstalledFile, attrs: map[string]string{mode.AttrSupervisorService: "opampsupervisor"}, supervised: true,
		},
		{
			name: "container",
			configure: func(c *config.Config) {
				c.Mode, c.Container.Name, c.Container.DockerHost = config.ModeContainer, "otelcol", docker
			},
			state: ctr.InstalledFile, prefix: ctr.StatePrefix,
			attrs: map[string]string{mode.AttrSupervisorService: "otelcol"},
			running: map[string]string{
				mode.AttrCollectorImageVersion: "0.149.0",
				mode.AttrCollectorImageDigest:  "sha256:" + strings.Repeat("0", 10) + "otelcol",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.NewDefaultConfig()
			tt.configure(cfg)
			m, err := Lookup(cfg.Mode)
			if err != nil {
				t.Fatal(err)
			}
			if m.State.Installed != tt.state || m.State.Prefix != tt.prefix {
				t.Errorf("state layout = %+v, want installed %q prefix %q", m.State, tt.state, tt.prefix)
			}
			rt, err := For(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := rt.Attributes(); !maps.Equal(got, tt.attrs) {
				t.Errorf("attributes = %v, want %v", got, tt.attrs)
			}
			if got := rt.Supervisor() != nil; got != tt.supervised {
				t.Errorf("has a supervisor controller: %v, want %v", got, tt.supervised)
			}
			l, looks := rt.(mode.RunningLooker)
			if looks != (tt.running != nil) {
				t.Fatalf("looks up what runs: %v, want %v", looks, tt.running != nil)
			}
			if !looks {
				return
			}
			got, err := l.LookupRunning(context.Background())
			if err != nil || !maps.Equal(got, tt.running) {
				t.Errorf("LookupRunning = %v, %v; want %v", got, err, tt.running)
			}
		})
	}
}
