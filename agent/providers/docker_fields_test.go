package providers

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/vars"
)

func TestContainerPorts(t *testing.T) {
	port := func(s string) network.Port { p, _ := network.ParsePort(s); return p }
	bind := func(ip, hostPort string) network.PortBinding {
		b := network.PortBinding{HostPort: hostPort}
		if ip != "" {
			b.HostIP = netip.MustParseAddr(ip)
		}
		return b
	}
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		exposed   network.PortSet
		published network.PortMap
		want      []any
	}{
		{"nothing", nil, nil, []any{}},
		{"exposed only, sorted", network.PortSet{port("9090/udp"): {}, port("80/tcp"): {}, port("80/udp"): {}}, nil,
			[]any{obj("port", int64(80), "protocol", "tcp"), obj("port", int64(80), "protocol", "udp"), obj("port", int64(9090), "protocol", "udp")}},
		{"every address on IPv4 and IPv6 is one entry", network.PortSet{port("80/tcp"): {}},
			network.PortMap{port("80/tcp"): {bind("0.0.0.0", "8080"), bind("::", "8080")}},
			[]any{obj("port", int64(80), "protocol", "tcp", "host_port", int64(8080))}},
		{"one address keeps it", nil,
			network.PortMap{port("443/tcp"): {bind("127.0.0.1", "8443"), bind("::1", "8443"), bind("", "9443")}},
			[]any{obj("port", int64(443), "protocol", "tcp", "host_port", int64(8443), "host_ip", "127.0.0.1"),
				obj("port", int64(443), "protocol", "tcp", "host_port", int64(8443), "host_ip", "::1"),
				obj("port", int64(443), "protocol", "tcp", "host_port", int64(9443))}},
		{"exposed, listed unpublished by the engine", network.PortSet{port("53/udp"): {}},
			network.PortMap{port("53/udp"): nil, port("8080/tcp"): {bind("0.0.0.0", "18080")}},
			[]any{obj("port", int64(53), "protocol", "udp"), obj("port", int64(8080), "protocol", "tcp", "host_port", int64(18080))}},
		{"a binding without a host port is not published", nil, network.PortMap{port("80/tcp"): {bind("0.0.0.0", "")}},
			[]any{obj("port", int64(80), "protocol", "tcp")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := container.InspectResponse{Config: &container.Config{ExposedPorts: tc.exposed},
				NetworkSettings: &container.NetworkSettings{Ports: tc.published}}
			if got := containerPorts(c); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ports = %v, want %v", got, tc.want)
			}
		})
	}
	if got := containerPorts(container.InspectResponse{}); len(got) != 0 {
		t.Errorf("a container without config or network settings: %v", got)
	}
}

// TestDockerProviderSeedFields runs a container with a command, labels and
// ports on a network of its own and checks every variable of the specification's
// docker provider, as published and as rendered.
func TestDockerProviderSeedFields(t *testing.T) {
	cli := testenv.Docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	buildTestImage(t, ctx, cli)

	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	netName := "myriarch-vars-net-" + suffix
	if _, err := cli.NetworkCreate(ctx, netName, client.NetworkCreateOptions{Driver: "bridge"}); err != nil {
		t.Fatalf("network create: %v", err)
	}
	t.Cleanup(func() { _, _ = cli.NetworkRemove(context.Background(), netName, client.NetworkRemoveOptions{}) })

	name := "myriarch-vars-seed-" + suffix
	web, dns := network.MustParsePort("8080/tcp"), network.MustParsePort("5353/udp")
	id := createAndStart(t, ctx, cli, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{Image: testImage, Cmd: []string{"--listen", ":8080", "--tier=front"},
			Labels:       map[string]string{"app": "web", "com.example.tier": "front"},
			ExposedPorts: network.PortSet{web: {}, dns: {}}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(netName),
			PortBindings: network.PortMap{web: {{HostIP: netip.MustParseAddr("127.0.0.1")}}}},
	})
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bindings := res.Container.NetworkSettings.Ports[web]
	if len(bindings) != 1 {
		t.Fatalf("the engine published 8080/tcp as %v", bindings)
	}
	hostPort, _ := strconv.ParseInt(bindings[0].HostPort, 10, 64)

	s := firstSnapshot(t, Config{Agent: ToggleConfig{off()}, Host: HostConfig{Enabled: off()}, Env: EnvConfig{Enabled: off()},
		Local: LocalConfig{Enabled: off()}, LocalDynamic: LocalDynamicConfig{Enabled: off()}, Docker: DockerConfig{Host: os.Getenv("DOCKER_HOST")}}, Options{})
	var m *vars.Mapping
	for i := range s.Mappings {
		if s.Mappings[i].ID == id {
			m = &s.Mappings[i]
		}
	}
	if m == nil {
		t.Fatalf("container %s not in the first snapshot: %+v", id, s.Mappings)
	}
	labels := map[string]any{"app": "web", "com.example.tier": "front"}
	want := map[string]any{
		"id":     id,
		"name":   name,
		"image":  testImage,
		"labels": labels,
		"cmd":    []any{"/app", "--listen", ":8080", "--tier=front"},
		"ports": []any{
			map[string]any{"port": int64(5353), "protocol": "udp"},
			map[string]any{"port": int64(8080), "protocol": "tcp", "host_port": hostPort, "host_ip": "127.0.0.1"},
		},
		"paths":     map[string]any{"log": res.Container.LogPath},
		"container": map[string]any{"id": id, "name": name, "image": map[string]any{"name": testImage}, "labels": labels},
	}
	if !reflect.DeepEqual(m.Vars, want) {
		t.Errorf("mapping vars\n got %v\nwant %v", m.Vars, want)
	}
	wantProc := []any{map[string]any{"add_fields": map[string]any{"target": "container", "fields": want["container"]}}}
	if !reflect.DeepEqual(m.Processors, wantProc) {
		t.Errorf("processors %v, want %v", m.Processors, wantProc)
	}

	data, err := vars.NewData(nil, []vars.Mapping{*m})
	if err != nil {
		t.Fatal(err)
	}
	for tmpl, want := range map[string]string{
		"${docker.id}":                      id,
		"${docker.name}":                    name,
		"${docker.image}":                   testImage,
		"${docker.labels.com.example.tier}": "front",
		"${docker.cmd.0} ${docker.cmd.2}":   "/app :8080",
		"${docker.ports.1.host_ip}:${docker.ports.1.host_port}": fmt.Sprintf("127.0.0.1:%d", hostPort),
		"${docker.ports.0.port}/${docker.ports.0.protocol}":     "5353/udp",
		"${docker.paths.log}":            res.Container.LogPath,
		"${docker.container.id}":         id,
		"${docker.container.image.name}": testImage,
	} {
		tm, err := vars.Parse(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := tm.Render(data.MappingSet(0))
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%s = %v, %v; want %s", tmpl, got, err, want)
		}
	}
	if !strings.HasSuffix(res.Container.LogPath, id+"-json.log") {
		t.Errorf("paths.log %q is not the json-file log of %s", res.Container.LogPath, id)
	}
}
