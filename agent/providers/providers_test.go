package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/buildinfo"
	"github.com/myriarch/myriarch/internal/vars"
)

func off() *bool { f := false; return &f }

// absentDocker points the docker provider at a socket nothing listens on.
func absentDocker(t *testing.T) DockerConfig {
	return DockerConfig{Host: "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")}
}

// firstSnapshot runs the providers of cfg until their first snapshot.
func firstSnapshot(t *testing.T, cfg Config, opts Options) Snapshot {
	t.Helper()
	m, err := New(cfg, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got *Snapshot
	if err := m.Run(ctx, func(s Snapshot) {
		if got == nil {
			got = &s
			cancel()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("no snapshot")
	}
	return *got
}

func TestConfigFromYAML(t *testing.T) {
	src := `
agent: {enabled: false}
host: {enabled: false}
env: {enabled: false}
local:
  vars:
    foo: bar
    port: 8080
    nested: {list: [1, two]}
local_dynamic:
  items:
    - vars: {item: key1}
      processors: [{add_fields: {target: x, fields: {a: 1}}}]
    - vars: {item: key2}
docker: {enabled: false}
`
	var cfg Config
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := firstSnapshot(t, cfg, Options{})
	if len(s.Context) != 1 {
		t.Fatalf("disabled providers published: %v", s.Context)
	}
	local := s.Context["local"].(map[string]any)
	if local["foo"] != "bar" || local["port"] != int64(8080) {
		t.Fatalf("local = %v", local)
	}
	if len(s.Mappings) != 2 || s.Mappings[0].ID != "0" || s.Mappings[1].ID != "1" ||
		s.Mappings[0].Provider != "local_dynamic" || s.Mappings[0].Vars["item"] != "key1" || len(s.Mappings[0].Processors) != 1 {
		t.Fatalf("local_dynamic mappings = %+v", s.Mappings)
	}

	// The snapshot feeds the engine directly.
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	_ = yaml.Unmarshal([]byte(`inputs: [{id: in, key: "${local_dynamic.item}", foo: "${local.foo}"}]`), &doc)
	res, err := vars.Engine{}.RenderDocument(doc, data)
	if err != nil {
		t.Fatal(err)
	}
	inputs := res.Document["inputs"].([]any)
	if len(inputs) != 2 || inputs[0].(map[string]any)["id"] != "in-local_dynamic-0" || inputs[1].(map[string]any)["key"] != "key2" {
		t.Fatalf("rendered %v", inputs)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := Config{
		Local: LocalConfig{Vars: map[string]any{"c": make(chan int)}},
		LocalDynamic: LocalDynamicConfig{Items: []LocalDynamicItem{{}, {Vars: map[string]any{"f": func() {}}},
			{Processors: []any{map[string]any{"add_fields": map[string]any{"fields": map[string]any{"a": 1}}},
				map[string]any{"remotetap": map[string]any{"endpoint": "0.0.0.0:12001"}}}}}},
		Docker: DockerConfig{Host: "::not a url"},
	}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"providers.local.vars", "providers.local_dynamic.items[1].vars", "providers.docker.host",
		`providers.local_dynamic.items[2].processors[1]: type "remotetap" is not supported: a mapping may carry add_fields only`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := New(cfg, nil, Options{}); err == nil {
		t.Error("New accepted an invalid config")
	}
}

func TestEnvProvider(t *testing.T) {
	t.Setenv("MYRIARCH_PROVIDER_TEST", "a=b")
	t.Setenv("MYRIARCH_PROVIDER_OTHER", "c")
	t.Setenv("SECRET_TOKEN", "never")
	cfg := Config{Agent: ToggleConfig{off()}, Host: HostConfig{Enabled: off()}, Local: LocalConfig{Enabled: off()},
		LocalDynamic: LocalDynamicConfig{Enabled: off()}, Docker: DockerConfig{Enabled: off()}}
	if env := firstSnapshot(t, cfg, Options{}).Context["env"].(map[string]any); len(env) != 0 {
		t.Fatalf("without providers.env.allow the environment is published: %v", env)
	}
	cfg.Env.Allow = []string{"MYRIARCH_PROVIDER_*", "PATH"}
	env := firstSnapshot(t, cfg, Options{}).Context["env"].(map[string]any)
	if env["MYRIARCH_PROVIDER_TEST"] != "a=b" || env["MYRIARCH_PROVIDER_OTHER"] != "c" || env["SECRET_TOKEN"] != nil {
		t.Fatalf("env = %v", env)
	}
	if bad := (&Config{Env: EnvConfig{Allow: []string{"*", "A=B"}}}).Validate(); bad == nil || !strings.Contains(bad.Error(), "providers.env.allow[0]") ||
		!strings.Contains(bad.Error(), "providers.env.allow[1]") {
		t.Fatalf("bad allow patterns: %v", bad)
	}
	for k, v := range env {
		if _, ok := v.(string); !ok {
			t.Fatalf("env %s is %T, want string", k, v)
		}
	}
}

func TestAgentProvider(t *testing.T) {
	s := firstSnapshot(t, Config{AgentID: "agent-42", Host: HostConfig{Enabled: off()}, Env: EnvConfig{Enabled: off()}, Local: LocalConfig{Enabled: off()},
		LocalDynamic: LocalDynamicConfig{Enabled: off()}, Docker: DockerConfig{Enabled: off()}}, Options{})
	a := s.Context["agent"].(map[string]any)
	v := a["version"].(map[string]any)
	if a["id"] != "agent-42" || v["version"] != buildinfo.Version {
		t.Fatalf("agent = %v", a)
	}
	for _, k := range []string{"commit", "build_time", "snapshot"} {
		if _, ok := v[k]; !ok {
			t.Errorf("agent.version.%s missing", k)
		}
	}
	if agentData("x", "1.2.3")["version"].(map[string]any)["snapshot"] != false ||
		agentData("x", "1.2.3-SNAPSHOT")["version"].(map[string]any)["snapshot"] != true ||
		agentData("x", "1.2.3+build.5")["version"].(map[string]any)["snapshot"] != false {
		t.Error("snapshot flag wrong")
	}
}

// TestHostProvider reads this machine through gopsutil and compares with
// what the standard library says.
func TestHostProvider(t *testing.T) {
	data, err := hostData(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hn, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if data["name"] != hn {
		t.Errorf("name %v, want %s", data["name"], hn)
	}
	if data["platform"] != runtime.GOOS {
		t.Errorf("platform %v, want %s", data["platform"], runtime.GOOS)
	}
	for _, k := range []string{"architecture", "os_family", "os_platform", "os_version"} {
		if _, ok := data[k].(string); !ok {
			t.Errorf("%s is %T, want a string", k, data[k])
		}
	}
	if data["architecture"] == "" {
		t.Error("architecture empty")
	}
	ips := data["ip"].([]any)
	for _, ip := range ips {
		if net.ParseIP(ip.(string)) == nil || net.ParseIP(ip.(string)).IsLoopback() {
			t.Errorf("ip %v is not a non-loopback address", ip)
		}
	}
	for _, mac := range data["mac"].([]any) {
		if _, err := net.ParseMAC(mac.(string)); err != nil {
			t.Errorf("mac %v: %v", mac, err)
		}
	}
	// Cross-check with the standard library: every up, non-loopback
	// interface address is reported.
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagLoopback != 0 || ifc.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		want += len(addrs)
	}
	if len(ips) != want {
		t.Errorf("host.ip has %d addresses, the standard library sees %d", len(ips), want)
	}

	// Through the manager, as the host context provider.
	s := firstSnapshot(t, Config{Agent: ToggleConfig{off()}, Env: EnvConfig{Enabled: off()}, Local: LocalConfig{Enabled: off()},
		LocalDynamic: LocalDynamicConfig{Enabled: off()}, Docker: DockerConfig{Enabled: off()}}, Options{})
	if s.Context["host"].(map[string]any)["name"] != hn {
		t.Errorf("snapshot host = %v", s.Context["host"])
	}
}

// TestDockerAbsent: no engine means no mappings and no error.
func TestDockerAbsent(t *testing.T) {
	s := firstSnapshot(t, Config{Agent: ToggleConfig{off()}, Host: HostConfig{Enabled: off()}, Env: EnvConfig{Enabled: off()},
		Local: LocalConfig{Enabled: off()}, LocalDynamic: LocalDynamicConfig{Enabled: off()}, Docker: absentDocker(t)}, Options{})
	if len(s.Mappings) != 0 {
		t.Fatalf("mappings without docker: %+v", s.Mappings)
	}
	// The provider itself keeps running without error until cancelled.
	p := &dockerProvider{host: absentDocker(t).Host, retry: 5 * time.Millisecond, log: discard()}
	ctx, cancel := context.WithCancel(context.Background())
	sets := make(chan []vars.Mapping, 1)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, func(ms []vars.Mapping) { sets <- ms }) }()
	if ms := <-sets; len(ms) != 0 {
		t.Fatalf("absent docker published %v", ms)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("absent docker returned %v", err)
	}
}

func TestInspect(t *testing.T) {
	cfg := Config{
		AgentID:      "agent-7",
		Host:         HostConfig{Enabled: off()},
		Env:          EnvConfig{Enabled: off()},
		Local:        LocalConfig{Vars: map[string]any{"a.b": "dotted", "n": 1}},
		LocalDynamic: LocalDynamicConfig{Items: []LocalDynamicItem{{Vars: map[string]any{"x": "y"}}}},
		Docker:       absentDocker(t),
	}
	var buf bytes.Buffer
	if err := Inspect(context.Background(), cfg, false, &buf, nil); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Context  map[string]map[string]any `json:"context"`
		Mappings []map[string]any          `json:"mappings"`
	}
	dec := json.NewDecoder(&buf)
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("inspect output is not JSON: %v\n%s", err, buf.String())
	}
	if dec.More() {
		t.Fatal("inspect without --watch printed more than one snapshot")
	}
	if got.Context["agent"]["id"] != "agent-7" || got.Context["local"]["a.b"] != "dotted" {
		t.Fatalf("context %v", got.Context)
	}
	if len(got.Mappings) != 1 || got.Mappings[0]["provider"] != "local_dynamic" || got.Mappings[0]["id"] != "0" {
		t.Fatalf("mappings %v", got.Mappings)
	}
}

// TestInspectWatch streams snapshots until the context ends.
func TestInspectWatch(t *testing.T) {
	cfg := Config{Agent: ToggleConfig{off()}, Host: HostConfig{Enabled: off()}, Env: EnvConfig{Enabled: off()},
		Local: LocalConfig{Vars: map[string]any{"k": "v"}}, LocalDynamic: LocalDynamicConfig{Enabled: off()}, Docker: DockerConfig{Enabled: off()}}
	ctx, cancel := context.WithCancel(context.Background())
	w := &notifyWriter{wrote: make(chan struct{}, 10)}
	done := make(chan error, 1)
	go func() { done <- Inspect(ctx, cfg, true, w, nil) }()
	<-w.wrote
	select {
	case err := <-done:
		t.Fatalf("watch returned after the first snapshot: %v", err)
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var s Snapshot
	if err := json.Unmarshal(w.buf.Bytes(), &s); err != nil || s.Context["local"] == nil {
		t.Fatalf("watch output %q: %v", w.buf.String(), err)
	}
}

type notifyWriter struct {
	buf   bytes.Buffer
	wrote chan struct{}
}

func (n *notifyWriter) Write(p []byte) (int, error) {
	n.buf.Write(p)
	n.wrote <- struct{}{}
	return len(p), nil
}

// TestHostProviderRefresh re-reads on its interval, publishes only changes
// and stops cleanly.
func TestHostProviderRefresh(t *testing.T) {
	h := &hostProvider{refresh: time.Millisecond, log: discard()}
	ctx, cancel := context.WithCancel(context.Background())
	sets := make(chan map[string]any, 100)
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx, func(d map[string]any) { sets <- d }) }()
	first := <-sets
	if first["name"] == "" {
		t.Fatalf("host data %v", first)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Facts do not change within the test: whatever else arrived was a
	// real change (e.g. an address came or went), never a repeat.
	close(sets)
	prev := first
	for d := range sets {
		if fmt.Sprint(d) == fmt.Sprint(prev) {
			t.Fatalf("unchanged host facts published again: %v", d)
		}
		prev = d
	}
}

// providers.host.ip/mac: false keep the addresses on the host.
func TestHostAddressesOff(t *testing.T) {
	no := false
	s := firstSnapshot(t, Config{Agent: ToggleConfig{off()}, Env: EnvConfig{Enabled: off()}, Local: LocalConfig{Enabled: off()},
		Host: HostConfig{IP: &no, MAC: &no}, LocalDynamic: LocalDynamicConfig{Enabled: off()}, Docker: DockerConfig{Enabled: off()}}, Options{})
	host := s.Context["host"].(map[string]any)
	if _, ok := host["ip"]; ok {
		t.Errorf("host.ip published: %v", host["ip"])
	}
	if _, ok := host["mac"]; ok {
		t.Errorf("host.mac published: %v", host["mac"])
	}
	if host["name"] == "" {
		t.Error("host.name missing")
	}
}
