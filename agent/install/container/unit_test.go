package container

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/registry"
	"github.com/myriarch/myriarch/agent/install"
	"github.com/open-telemetry/opamp-go/protobufs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

var testDigest = strings.Repeat("ab", 32)

func digestBytes() []byte { b, _ := hex.DecodeString(testDigest); return b }

func TestParseSource(t *testing.T) {
	for _, tc := range []struct {
		url     string
		pull    string
		tarball bool
		err     string
	}{
		{url: "docker://127.0.0.1:5000/otel/c@sha256:" + testDigest, pull: "127.0.0.1:5000/otel/c@sha256:" + testDigest},
		{url: "docker://otel/c:0.1@sha256:" + testDigest, pull: "docker.io/otel/c:0.1@sha256:" + testDigest},
		{url: "https://example.test/c.tar", tarball: true},
		{url: "docker://otel/c:0.1", err: "must pin a digest"},
		{url: "docker://otel/c@sha256:" + strings.Repeat("cd", 32), err: "digest mismatch"},
		{url: "docker://otel/Bad@sha256:" + testDigest, err: "not an image reference"},
		{url: "ftp://example.test/c.tar", err: "container mode accepts"},
		{url: "/local/file.tar", err: "container mode accepts"},
	} {
		src, err := parseSource(tc.url, digestBytes())
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.url, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case src.Pull != tc.pull || (src.TarballURL != "") != tc.tarball:
			t.Errorf("%s: got %+v", tc.url, src)
		}
	}
}

func TestRegistryAuth(t *testing.T) {
	decode := func(s string) registry.AuthConfig {
		var ac registry.AuthConfig
		raw, err := base64.URLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(raw, &ac)
		return ac
	}
	h := func(kv ...string) []*protobufs.Header {
		var out []*protobufs.Header
		for i := 0; i < len(kv); i += 2 {
			out = append(out, &protobufs.Header{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	if s, err := registryAuth(nil, "r"); err != nil || s != "" {
		t.Errorf("no headers: %q %v", s, err)
	}
	s, err := registryAuth(h("authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:p:x"))), "reg:5000")
	if ac := decode(s); err != nil || ac.Username != "u" || ac.Password != "p:x" || ac.ServerAddress != "reg:5000" {
		t.Errorf("basic: %+v %v", ac, err)
	}
	s, err = registryAuth(h("Authorization", "Bearer tok"), "reg")
	if ac := decode(s); err != nil || ac.RegistryToken != "tok" {
		t.Errorf("bearer: %+v %v", ac, err)
	}
	explicit := base64.URLEncoding.EncodeToString([]byte(`{"username":"x","password":"y"}`))
	if s, err := registryAuth(h("X-Registry-Auth", explicit), "reg"); err != nil || s != explicit {
		t.Errorf("explicit: %q %v", s, err)
	}
	for _, tc := range []struct {
		hdr  []*protobufs.Header
		want string
	}{
		{h("Authorization", "Basic !!!"), "not base64"},
		{h("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("nocolon"))), "user:password"},
		{h("Authorization", "Digest x"), "not supported"},
		{h("X-Registry-Auth", "%%%"), "not base64"},
		{h("X-Registry-Auth", base64.URLEncoding.EncodeToString([]byte("[1]"))), "not an auth config"},
		{h("Cookie", "a=b"), "cannot be sent"},
	} {
		if _, err := registryAuth(tc.hdr, "reg"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.hdr, err, tc.want)
		}
	}
}

// oldContainer is an inspect response like the engine's for a collector
// container started from an image with defaults.
func oldContainer() (container.InspectResponse, *dockerspec.DockerOCIImageConfig) {
	img := &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{
		Env: []string{"PATH=/", "FAKE_VERSION=0.1.0"}, Entrypoint: []string{"/otelcol"}, Cmd: []string{"--default"},
		Labels: map[string]string{VersionLabel: "0.1.0"}, WorkingDir: "/", Volumes: map[string]struct{}{"/data": {}},
		StopSignal: "SIGINT",
	}}
	old := container.InspectResponse{
		ID: "0123456789abcdef", Name: "/otelcol",
		Config: &container.Config{
			Hostname: "host-a", Env: []string{"PATH=/", "FAKE_VERSION=0.1.0", "SITE=x"},
			Entrypoint: []string{"/otelcol"}, Cmd: []string{"--custom"}, Labels: map[string]string{VersionLabel: "0.1.0", "site": "edge"},
			WorkingDir: "/", User: "1000", StopSignal: "SIGINT", Volumes: map[string]struct{}{"/data": {}},
		},
		HostConfig: &container.HostConfig{NetworkMode: "host", RestartPolicy: container.RestartPolicy{Name: "always"},
			Binds: []string{"/srv/sup:/var/lib/otelcol/supervisor"}, Resources: container.Resources{Memory: 1 << 26}},
		Mounts: []container.MountPoint{
			{Type: mount.TypeBind, Source: "/srv/sup", Destination: "/var/lib/otelcol/supervisor", RW: true},
			{Type: mount.TypeVolume, Name: "f00d", Source: "/var/lib/docker/volumes/f00d/_data", Destination: "/data", RW: true},
		},
	}
	return old, img
}

func raw(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReproduce(t *testing.T) {
	old, img := oldContainer()
	spec, err := reproduce(old, raw(t, old.Config), raw(t, old.HostConfig), img, "new:0.2.0", "/var/lib/otelcol/supervisor")
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Config
	if c.Image != "new:0.2.0" || c.Hostname != "" || c.User != "1000" || c.WorkingDir != "" || c.StopSignal != "" {
		t.Errorf("config %+v", c)
	}
	if strings.Join(c.Env, ",") != "SITE=x" {
		t.Errorf("env %v: image defaults must be dropped, site settings kept", c.Env)
	}
	if c.Entrypoint != nil || strings.Join(c.Cmd, " ") != "--custom" {
		t.Errorf("entrypoint %v cmd %v: the default entrypoint is dropped, the custom command kept", c.Entrypoint, c.Cmd)
	}
	if len(c.Labels) != 1 || c.Labels["site"] != "edge" {
		t.Errorf("labels %v: the old image's version label must not be carried over", c.Labels)
	}
	if len(c.Volumes) != 0 {
		t.Errorf("volumes %v", c.Volumes)
	}
	h := spec.Host
	if h.NetworkMode != "host" || h.RestartPolicy.Name != "always" || h.Memory != 1<<26 || len(h.Binds) != 1 {
		t.Errorf("host config %+v", h)
	}
	if len(spec.AddedMounts) != 1 || spec.AddedMounts[0].Source != "f00d" || spec.AddedMounts[0].Target != "/data" {
		t.Errorf("anonymous volume not re-attached: %+v", spec.AddedMounts)
	}
	if spec.Network != nil {
		t.Errorf("host networking needs no endpoint config: %+v", spec.Network)
	}
}

func TestReproduceRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mod     func(*container.InspectResponse)
		rawHost func(map[string]any)
		want    string
	}{
		{name: "auto remove", mod: func(c *container.InspectResponse) { c.HostConfig.AutoRemove = true }, want: "AutoRemove"},
		{name: "tty", mod: func(c *container.InspectResponse) { c.Config.Tty = true }, want: "interactive"},
		{name: "links", mod: func(c *container.InspectResponse) { c.HostConfig.Links = []string{"/db:/otelcol/db"} }, want: "legacy container links"},
		{name: "own namespace", mod: func(c *container.InspectResponse) { c.HostConfig.PidMode = "container:0123456789ab" }, want: "refers to the container being replaced"},
		{name: "storage off mounts", mod: func(c *container.InspectResponse) { c.Mounts = nil }, want: "instance UID would be lost"},
		{name: "two networks", mod: func(c *container.InspectResponse) {
			c.HostConfig.NetworkMode = "a"
			c.NetworkSettings = &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{"a": {}, "b": {}}}
		}, want: "2 networks"},
		{name: "unknown engine setting", rawHost: func(m map[string]any) { m["FutureIsolationKnob"] = "strict" }, want: "HostConfig.FutureIsolationKnob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, img := oldContainer()
			if tc.mod != nil {
				tc.mod(&old)
			}
			var hm map[string]any
			json.Unmarshal(raw(t, old.HostConfig), &hm)
			if tc.rawHost != nil {
				tc.rawHost(hm)
			}
			_, err := reproduce(old, raw(t, old.Config), raw(t, hm), img, "new", "/var/lib/otelcol/supervisor")
			if !errors.Is(err, ErrUnreproducible) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestVerifyCreated(t *testing.T) {
	old := `{"NetworkMode":"host","Memory":67108864,"Mounts":null,"ShmSize":67108864}`
	added := []mount.Mount{{Type: mount.TypeVolume, Source: "f00d", Target: "/data"}}
	same := `{"NetworkMode":"host","Memory":67108864,"Mounts":[{"Type":"volume","Source":"f00d","Target":"/data"}],"ShmSize":67108864}`
	if err := verifyCreated(json.RawMessage(old), json.RawMessage(same), added); err != nil {
		t.Errorf("expected difference flagged: %v", err)
	}
	dropped := `{"NetworkMode":"host","Memory":0,"Mounts":[{"Type":"volume","Source":"f00d","Target":"/data"}],"ShmSize":67108864}`
	if err := verifyCreated(json.RawMessage(old), json.RawMessage(dropped), added); err == nil || !strings.Contains(err.Error(), "HostConfig.Memory") {
		t.Errorf("dropped memory limit not flagged: %v", err)
	}
	if err := verifyCreated(json.RawMessage(`{`), json.RawMessage(same), nil); err == nil {
		t.Error("bad JSON accepted")
	}
}

func TestLoadedImages(t *testing.T) {
	refs, err := loadedImages(strings.NewReader(`{"stream":"Loaded image: repo:1.0\n"}{"stream":"Loaded image ID: sha256:abc\n"}`))
	if err != nil || strings.Join(refs, ",") != "repo:1.0,sha256:abc" {
		t.Errorf("%v %v", refs, err)
	}
	if _, err := loadedImages(strings.NewReader(`{"errorDetail":{"message":"invalid tar header"},"error":"invalid tar header"}`)); err == nil || !strings.Contains(err.Error(), "invalid tar") {
		t.Errorf("error not reported: %v", err)
	}
	if _, err := loadedImages(strings.NewReader(`not json`)); err == nil {
		t.Error("garbage accepted")
	}
}

func TestOptionsValidate(t *testing.T) {
	good := Options{Name: "otelcol", Package: "c"}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Options{Name: "bad name!", DockerHost: "ftp://x", StorageDir: "rel", HealthcheckURL: "http://10.0.0.1/h", PullTimeout: -1}
	err := bad.Validate()
	for _, want := range []string{"container.name", "container.docker_host", "collector.package", "supervisor.storage_dir",
		"must be loopback", "pull timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

// Container-mode admission, before anything is fetched: the download URL's
// form and the refusal of self-updates.
func TestAdmission(t *testing.T) {
	b, err := New(Options{Name: "otelcol", Package: "collector", DockerHost: "unix:///nonexistent.sock"})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := install.New(install.Options{StateDir: t.TempDir(), StatePrefix: StatePrefix, NoSelfUpdate: NoSelfUpdate}, slog.New(slog.DiscardHandler), b)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	eng.Recover(t.Context()) // no engine answers: what runs is unknown
	pull := "docker://reg.test/c@sha256:" + testDigest
	pkg := func(typ protobufs.PackageType, url string) *protobufs.PackageAvailable {
		return &protobufs.PackageAvailable{Type: typ, Version: "1.3.0", File: &protobufs.DownloadableFile{DownloadUrl: url, ContentHash: digestBytes()}}
	}
	addon, top := protobufs.PackageType_PackageType_Addon, protobufs.PackageType_PackageType_TopLevel
	for _, tc := range []struct {
		name string
		p    *protobufs.PackageAvailable
		want string
	}{
		{"myriarch-updater", pkg(top, pull), "replaced with its own image"},
		{"collector", pkg(addon, "docker://reg.test/c:1.3.0"), "must pin a digest"},
		{"collector", pkg(addon, "docker://reg.test/c@sha256:"+strings.Repeat("cd", 32)), "digest mismatch"},
		{"collector", pkg(addon, "ftp://reg.test/c.tar"), "container mode accepts"},
	} {
		var got *protobufs.PackageStatuses
		eng.HandlePackages(t.Context(), &protobufs.PackagesAvailable{Packages: map[string]*protobufs.PackageAvailable{tc.name: tc.p}},
			func(s *protobufs.PackageStatuses) error { got = s; return nil })
		st := got.GetPackages()[tc.name]
		if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), tc.want) {
			t.Errorf("%s %s: %v, want InstallFailed naming %q", tc.name, tc.p.GetFile().GetDownloadUrl(), st, tc.want)
		}
	}
}
