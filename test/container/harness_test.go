// Package container_test runs the container-mode install back-end
// (agent/install/container) against a real Docker engine (DOCKER_HOST; start one
// with `make docker-up`). Images are built here FROM scratch from static Go
// binaries (a fake collector, or the real supervisor + collectors from
// test/peers), pulls go to a registry this test serves on 127.0.0.1, and
// every container uses host networking. Without an engine the tests fail
// (internal/testenv), naming how to start one.
package container_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"aead.dev/minisign"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/install"
	ctr "github.com/myriarch/myriarch/agent/install/container"
	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/myriarch/myriarch/agent/supervisorstate"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/test/peers/peerrun"
)

const (
	pkgName    = "collector"
	storageDir = "/var/lib/otelcol/supervisor"
)

var (
	fakeOnce  sync.Once
	fakeLayer v1.Layer
	fakeErr   error
)

func TestMain(m *testing.M) {
	if code, isChild := installtest.Child(fixture); isChild {
		os.Exit(code)
	}
	os.Exit(testkit.RunChecked(m.Run))
}

// fakeCollector builds ./fakecollector once, statically (CGO_ENABLED=0),
// for FROM scratch images, and the one image layer that holds it: every
// fake image shares that layer (they differ in their config only), so it
// is compressed and digested once per run, not once per image.
func fakeCollector(t testing.TB) v1.Layer {
	fakeOnce.Do(func() {
		var bin []byte
		if bin, fakeErr = installtest.BuildStatic("fakecollector"); fakeErr != nil {
			return
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Name: "fakecollector", Mode: 0o755, Size: int64(len(bin)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg})
		tw.Write(bin)
		tw.Close()
		fakeLayer, fakeErr = tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil },
			tarball.WithCompressedCaching)
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	return fakeLayer
}

type imageSpec struct {
	version     string
	exit        bool // the collector exits at once
	healthcheck bool // the image has a HEALTHCHECK
	unhealthy   bool // the image has a HEALTHCHECK that always fails
	volume      bool // the image declares VOLUME storageDir
}

// fakeImage builds a FROM scratch image holding only the fake collector.
func fakeImage(t testing.TB, s imageSpec) v1.Image {
	t.Helper()
	layer := fakeCollector(t)
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = []string{"/fakecollector"}
	cf.Config.Env = []string{"FAKE_VERSION=" + s.version}
	if s.exit {
		cf.Config.Env = append(cf.Config.Env, "FAKE_EXIT=1")
	}
	// The test's name makes the image, and its ID, the test's own (the same
	// spec built twice in one test is one image): removeImage removes the
	// containers of an image ID, and tests running in parallel must not
	// remove each other's.
	cf.Config.Labels = map[string]string{ctr.VersionLabel: s.version, "dev.myriarch.test.image-only": s.version,
		"dev.myriarch.test.owner": t.Name()}
	if s.healthcheck {
		cf.Config.Healthcheck = &v1.HealthConfig{Test: []string{"CMD", "/fakecollector", "healthcheck"},
			Interval: 300 * time.Millisecond, Timeout: time.Second, Retries: 3}
	}
	if s.unhealthy {
		cf.Config.Healthcheck = &v1.HealthConfig{Test: []string{"CMD", "/fakecollector", "healthcheck-fail"},
			Interval: 200 * time.Millisecond, Timeout: time.Second, Retries: 2}
	}
	if s.volume {
		cf.Config.Volumes = map[string]struct{}{storageDir: {}}
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// writeTarball writes img as a `docker save` tarball tagged ref.
func writeTarball(t testing.TB, img v1.Image, ref, path string) {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
}

// loadImage puts img into the engine under ref.
func loadImage(t testing.TB, cli *client.Client, img v1.Image, ref string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "img.tar")
	writeTarball(t, img, ref, path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := cli.ImageLoad(context.Background(), f, client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(res)
	res.Close()
	if !strings.Contains(string(out), "Loaded image") {
		t.Fatalf("image load: %s", out)
	}
	t.Cleanup(func() { removeImage(cli, ref) })
}

func randName(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// freePort is a free loopback port below the ephemeral range, which the
// other tests' outgoing connections cannot take before it is listened on.
func freePort(t testing.TB) int {
	p, err := peerrun.LocalPort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// collector is a running test collector container.
type collector struct {
	name    string
	port    int
	storage string // host dir bind-mounted at storageDir ("" = image volume)
}

type containerMod func(*container.Config, *container.HostConfig)

// startCollector creates and starts <name> from image with the settings a
// site would use: host networking, env, labels, a restart policy, a memory
// limit, log rotation, and the supervisor storage dir on a bind mount
// (bind=true) or on the image's anonymous volume.
func startCollector(t testing.TB, cli *client.Client, image string, bind bool, mods ...containerMod) collector {
	t.Helper()
	c := collector{name: randName("myriarch-ct-"), port: freePort(t)}
	cfg := &container.Config{
		Image:  image,
		Env:    []string{"FAKE_PORT=" + strconv.Itoa(c.port), "FAKE_STORAGE=" + storageDir, "SITE_SETTING=kept"},
		Labels: map[string]string{"dev.myriarch.test.site": "edge-7"},
	}
	host := &container.HostConfig{
		NetworkMode:   "host",
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyUnlessStopped},
		LogConfig:     container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "1m", "max-file": "2"}},
		Resources:     container.Resources{Memory: 64 << 20},
	}
	if bind {
		c.storage = t.TempDir()
		host.Mounts = []mount.Mount{{Type: mount.TypeBind, Source: c.storage, Target: storageDir}}
	}
	for _, m := range mods {
		m(cfg, host)
	}
	ctx := context.Background()
	t.Cleanup(func() { removeWithVolumes(cli, c.name, c.name+ctr.NextSuffix) })
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: c.name, Config: cfg, HostConfig: host})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := waitServing(t, c.port, 20*time.Second); v == "" {
		t.Fatalf("collector %s does not answer on port %d", c.name, c.port)
	}
	return c
}

// waitServing waits until the collector answers and returns its version.
func waitServing(t testing.TB, port int, timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if v := served(port); v != "" {
			return v
		}
		time.Sleep(50 * time.Millisecond)
	}
	return ""
}

var probeClient = &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func served(port int) string {
	resp, err := probeClient.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

func inspect(t testing.TB, cli *client.Client, nameOrID string) (container.InspectResponse, bool) {
	t.Helper()
	r, err := cli.ContainerInspect(context.Background(), nameOrID, client.ContainerInspectOptions{})
	if err != nil {
		if strings.Contains(err.Error(), "No such container") {
			return container.InspectResponse{}, false
		}
		t.Fatal(err)
	}
	return r.Container, true
}

// instanceUID reads the supervisor state of a container through the engine.
func instanceUID(t testing.TB, cli *client.Client, id string) string {
	t.Helper()
	res, err := cli.CopyFromContainer(context.Background(), id, client.CopyFromContainerOptions{SourcePath: storageDir + "/" + supervisorstate.FileName})
	if err != nil {
		t.Fatalf("read instance UID of %s: %v", id, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(tr)
	st, err := supervisorstate.Parse("persistent_state.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return st.InstanceID
}

// assertOneRunning checks the invariant: exactly one container named
// <name> runs, no <name>-next exists, and it serves wantVersion.
func assertOneRunning(t testing.TB, cli *client.Client, c collector, wantVersion string) container.InspectResponse {
	t.Helper()
	cur, ok := inspect(t, cli, c.name)
	if !ok {
		t.Fatalf("no container named %s", c.name)
	}
	if !cur.State.Running {
		t.Fatalf("%s is not running: %s (exit %d)", c.name, cur.State.Status, cur.State.ExitCode)
	}
	if _, ok := inspect(t, cli, c.name+ctr.NextSuffix); ok {
		t.Fatalf("%s%s still exists", c.name, ctr.NextSuffix)
	}
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("name", c.name)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		for _, n := range s.Names {
			if n == "/"+c.name || n == "/"+c.name+ctr.NextSuffix {
				if s.ID != cur.ID {
					t.Fatalf("a second container %s (%s) exists next to %s", n, s.ID[:12], cur.ID[:12])
				}
			}
		}
	}
	if v := waitServing(t, c.port, 10*time.Second); v != wantVersion {
		t.Fatalf("%s serves version %q, want %q", c.name, v, wantVersion)
	}
	return cur
}

// recorder collects reported statuses.
type recorder struct {
	mu   sync.Mutex
	last *protobufs.PackageStatuses
	all  []*protobufs.PackageStatus
	ch   chan struct{}
}

func newRecorder() *recorder { return &recorder{ch: make(chan struct{}, 1)} }

func (r *recorder) report(s *protobufs.PackageStatuses) error {
	r.mu.Lock()
	r.last = s
	if st := s.GetPackages()[pkgName]; st != nil {
		r.all = append(r.all, st)
	}
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
	return nil
}

// wait returns the first terminal status (Installed or InstallFailed) of
// pkgName for the offered version.
func (r *recorder) wait(t testing.TB, version string, timeout time.Duration) *protobufs.PackageStatus {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		for _, st := range r.all {
			if st.GetServerOfferedVersion() == version && (st.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Installed ||
				st.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed) {
				r.mu.Unlock()
				return st
			}
		}
		r.mu.Unlock()
		select {
		case <-r.ch:
		case <-deadline:
			t.Fatalf("no final status for version %s within %s; statuses: %v", version, timeout, r.all)
		}
	}
}

type keys struct {
	pub  string
	priv minisign.PrivateKey
}

func newKeys(t testing.TB) keys {
	pub, priv, err := minisign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := pub.MarshalText()
	return keys{pub: string(txt), priv: priv}
}

// signBytes returns a pre-hashed minisign signature of msg.
func (k keys) signBytes(msg []byte) []byte {
	r := minisign.NewReader(bytes.NewReader(msg))
	io.Copy(io.Discard, r)
	return r.Sign(k.priv)
}

// engineSetup is what a test's engine is built from.
type engineSetup struct {
	install   install.Options
	container ctr.Options
}

func engineOptions(c collector, stateDir string, k keys) engineSetup {
	return engineSetup{
		install: install.Options{
			StateDir: stateDir, StatePrefix: ctr.StatePrefix, NoSelfUpdate: ctr.NoSelfUpdate,
			HealthWindow: 2 * time.Second, StartTimeout: 20 * time.Second, PollInterval: 100 * time.Millisecond,
			MinisignPublicKeys: []string{k.pub}, RequireSignature: true,
			Download: download.Options{Attempts: 2, BackoffBase: 100 * time.Millisecond},
		},
		container: ctr.Options{Name: c.name, Package: pkgName, StorageDir: storageDir},
	}
}

// testEngine is an install engine with its container back-end.
type testEngine struct {
	*install.Engine
	b *ctr.Backend
}

// Image is what the back-end last saw the collector container run.
func (e *testEngine) Image() (ctr.ImageInfo, bool) { return e.b.Image() }

func buildEngine(o engineSetup, log *slog.Logger) (*testEngine, error) {
	b, err := ctr.New(o.container)
	if err != nil {
		return nil, err
	}
	eng, err := install.New(o.install, log, b)
	if err != nil {
		b.Close()
		return nil, err
	}
	return &testEngine{Engine: eng, b: b}, nil
}

func newEngine(t testing.TB, o engineSetup) *testEngine {
	t.Helper()
	eng, err := buildEngine(o, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// offer builds a PackagesAvailable with the collector package. Its
// PackageAvailable.hash differs from the content hash (as myriarchd's does),
// so tests tell which one a status reports.
func offer(version, url string, hash, sig []byte, headers map[string]string) *protobufs.PackagesAvailable {
	f := &protobufs.DownloadableFile{DownloadUrl: url, ContentHash: hash, Signature: sig}
	if len(headers) > 0 {
		f.Headers = &protobufs.Headers{}
		for k, v := range headers {
			f.Headers.Headers = append(f.Headers.Headers, &protobufs.Header{Key: k, Value: v})
		}
	}
	return &protobufs.PackagesAvailable{
		AllPackagesHash: []byte("all-" + version),
		Packages: map[string]*protobufs.PackageAvailable{pkgName: {
			Type: protobufs.PackageType_PackageType_Addon, Version: version, File: f, Hash: offerHashOf(version, hash),
		}},
	}
}

// offerHashOf is the PackageAvailable.hash the test offers give content.
func offerHashOf(version string, content []byte) []byte {
	h := sha256.Sum256([]byte("offer " + version + " " + hex.EncodeToString(content)))
	return h[:]
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// removeWithVolumes removes containers and the volumes they use (an image
// VOLUME re-attached by name is no longer anonymous, so Docker would keep it).
func removeWithVolumes(cli *client.Client, names ...string) {
	ctx := context.Background()
	var vols []string
	for _, n := range names {
		if r, err := cli.ContainerInspect(ctx, n, client.ContainerInspectOptions{}); err == nil {
			for _, m := range r.Container.Mounts {
				if m.Type == mount.TypeVolume && m.Name != "" {
					vols = append(vols, m.Name)
				}
			}
		}
		cli.ContainerRemove(ctx, n, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}
	for _, v := range vols {
		cli.VolumeRemove(ctx, v, client.VolumeRemoveOptions{Force: true})
	}
}

// removeImage removes an image and, first, the test containers (with their
// volumes) that still use it, so nothing is left dangling.
func removeImage(cli *client.Client, ref string) {
	ctx := context.Background()
	img, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("ancestor", img.ID)})
	if err == nil {
		for _, c := range list.Items {
			removeWithVolumes(cli, c.ID)
		}
	}
	cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	if _, err := cli.ImageInspect(ctx, img.ID); err == nil {
		// Other tags of the same content (e.g. a digest reference) keep it.
		cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	}
}
