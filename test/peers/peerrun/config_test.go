package peerrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func validConfig() SupervisorConfig {
	return SupervisorConfig{
		ServerEndpoint: "ws://127.0.0.1:4320/v1/opamp",
		Headers:        map[string]string{"Authorization": "Bearer tok"},
		Collector:      "/opt/otelcol/current/otelcol",
		StorageDir:     "/var/lib/sup",
		InstanceID:     "01a23624-fe71-761b-9dc4-b4d1fba94a8f",
		NonIdentifyingAttributes: map[string]string{
			"site.name": "plant-7",
		},
		ExtraArgs:          []string{"--feature-gates=-foo"},
		BootstrapTimeout:   10 * time.Second,
		ConfigApplyTimeout: 2 * time.Second,
	}
}

func TestSupervisorConfigYAML(t *testing.T) {
	data, err := validConfig().YAML()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Server struct {
			Endpoint string              `yaml:"endpoint"`
			Headers  map[string][]string `yaml:"headers"`
			TLS      struct {
				Insecure bool `yaml:"insecure"`
			} `yaml:"tls"`
		} `yaml:"server"`
		Capabilities map[string]bool `yaml:"capabilities"`
		Agent        struct {
			Executable         string   `yaml:"executable"`
			Args               []string `yaml:"args"`
			InstanceID         string   `yaml:"instance_id"`
			BootstrapTimeout   string   `yaml:"bootstrap_timeout"`
			ConfigApplyTimeout string   `yaml:"config_apply_timeout"`
			Description        struct {
				NonIdentifying map[string]string `yaml:"non_identifying_attributes"`
			} `yaml:"description"`
		} `yaml:"agent"`
		Storage struct {
			Directory string `yaml:"directory"`
		} `yaml:"storage"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("rendered config does not parse: %v\n%s", err, data)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"server.endpoint", doc.Server.Endpoint, "ws://127.0.0.1:4320/v1/opamp"},
		{"server.headers", strings.Join(doc.Server.Headers["Authorization"], ","), "Bearer tok"},
		{"server.tls.insecure", doc.Server.TLS.Insecure, true},
		{"agent.executable", doc.Agent.Executable, "/opt/otelcol/current/otelcol"},
		{"agent.args", strings.Join(doc.Agent.Args, " "), NoMetricsArg + " --feature-gates=-foo"},
		{"agent.instance_id", doc.Agent.InstanceID, "01a23624-fe71-761b-9dc4-b4d1fba94a8f"},
		{"agent.bootstrap_timeout", doc.Agent.BootstrapTimeout, "10s"},
		{"agent.config_apply_timeout", doc.Agent.ConfigApplyTimeout, "2s"},
		{"site.name", doc.Agent.Description.NonIdentifying["site.name"], "plant-7"},
		{"storage.directory", doc.Storage.Directory, "/var/lib/sup"},
		{"accepts_remote_config", doc.Capabilities["accepts_remote_config"], true},
		{"reports_own_metrics", doc.Capabilities["reports_own_metrics"], false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if strings.Contains(string(data), "accepts_packages") {
		t.Error("config sets accepts_packages, which the supervisor rejects")
	}
}

func TestSupervisorConfigMinimal(t *testing.T) {
	c := SupervisorConfig{ServerEndpoint: "wss://[::1]:9/v1/opamp", Collector: "/c", StorageDir: "/s"}
	data, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, absent := range []string{"headers", "instance_id", "description", "bootstrap_timeout", "insecure"} {
		if strings.Contains(s, absent) {
			t.Errorf("minimal config mentions %s:\n%s", absent, s)
		}
	}
	if !strings.Contains(s, NoMetricsArg) {
		t.Errorf("config lacks %s:\n%s", NoMetricsArg, s)
	}
}

func TestSupervisorConfigValidate(t *testing.T) {
	tests := map[string]struct {
		mutate func(*SupervisorConfig)
		want   []string
	}{
		"no endpoint":        {func(c *SupervisorConfig) { c.ServerEndpoint = "" }, []string{"ServerEndpoint is required"}},
		"remote endpoint":    {func(c *SupervisorConfig) { c.ServerEndpoint = "ws://10.0.0.1:4320/v1/opamp" }, []string{"host must be loopback"}},
		"bad scheme":         {func(c *SupervisorConfig) { c.ServerEndpoint = "ftp://127.0.0.1/x" }, []string{"scheme must be"}},
		"unparsable":         {func(c *SupervisorConfig) { c.ServerEndpoint = "ws://127.0.0.1:%zz" }, []string{"ServerEndpoint"}},
		"no collector":       {func(c *SupervisorConfig) { c.Collector = "" }, []string{"Collector is required"}},
		"relative collector": {func(c *SupervisorConfig) { c.Collector = "bin/otelcol" }, []string{`Collector "bin/otelcol" must be an absolute path`}},
		"no storage":         {func(c *SupervisorConfig) { c.StorageDir = "" }, []string{"StorageDir is required"}},
		"relative storage":   {func(c *SupervisorConfig) { c.StorageDir = "state" }, []string{`StorageDir "state" must be an absolute path`}},
		"negative timeouts":  {func(c *SupervisorConfig) { c.BootstrapTimeout = -1; c.ConfigApplyTimeout = -1 }, []string{"BootstrapTimeout", "ConfigApplyTimeout"}},
		"everything wrong": {
			func(c *SupervisorConfig) { *c = SupervisorConfig{} },
			[]string{"ServerEndpoint is required", "Collector is required", "StorageDir is required"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if _, yerr := c.YAML(); yerr == nil {
				t.Error("YAML rendered an invalid config")
			}
			if werr := c.WriteFile(filepath.Join(t.TempDir(), "s.yaml")); werr == nil {
				t.Error("WriteFile wrote an invalid config")
			}
		})
	}
}

func TestSupervisorConfigWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etc", "supervisor.yaml")
	if err := validConfig().WriteFile(path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600 (it may hold a token)", st.Mode().Perm())
	}
}
