package container_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/moby/api/types/container"
	"github.com/open-telemetry/opamp-go/protobufs"

	ctr "github.com/myriarch/myriarch/agent/install/container"
	"github.com/myriarch/myriarch/internal/testenv"
)

const (
	regUser = "puller"
	regPass = "s3cret-pull"
)

// testRegistry serves an OCI registry on 127.0.0.1 that requires basic
// auth, like a private registry would.
func testRegistry(t testing.TB) (host string, pulls *atomic.Int64) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	pulls = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != regUser || p != regPass {
			w.Header().Set("WWW-Authenticate", `Basic realm="myriarch-test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
			pulls.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), pulls
}

func push(t testing.TB, host, repoTag string, img v1.Image) v1.Hash {
	t.Helper()
	ref, err := name.ParseReference(host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: regUser, Password: regPass})); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func basicAuth() map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(regUser+":"+regPass))}
}

// The main path: a new image pulled by digest from a private registry with
// credentials from the offer, started before the old container is removed,
// with every setting carried over and the supervisor instance UID kept.
func TestUpgradeByDigestPull(t *testing.T) {
	t.Parallel()
	cli := testenv.Docker(t)
	ctx := context.Background()
	host, _ := testRegistry(t)
	k := newKeys(t)

	oldRef := randName("myriarch-ct-img-") + ":0.1.0"
	loadImage(t, cli, fakeImage(t, imageSpec{version: "0.1.0", healthcheck: true}), oldRef)
	c := startCollector(t, cli, oldRef, true)
	before, _ := inspect(t, cli, c.name)
	uid := instanceUID(t, cli, before.ID)

	newImg := fakeImage(t, imageSpec{version: "0.2.0", healthcheck: true})
	dg := push(t, host, "otel/collector:0.2.0", newImg)
	ref := host + "/otel/collector@" + dg.String()
	t.Cleanup(func() { removeImage(cli, ref) })
	hash, _ := hex.DecodeString(dg.Hex)

	o := engineOptions(c, t.TempDir(), k)
	o.container.HealthcheckURL = fmt.Sprintf("http://127.0.0.1:%d/", c.port) // stands in for the supervisor's health endpoint
	eng := newEngine(t, o)
	if err := eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if img, ok := eng.Image(); !ok || img.Version != "0.1.0" {
		t.Fatalf("Image() before = %+v, %v; want version 0.1.0", img, ok)
	}
	rec := newRecorder()
	stop := watchDowntime(c.port)
	eng.HandlePackages(ctx, offer("0.2.0", "docker://"+ref, hash, k.signBytes([]byte(dg.String())), basicAuth()), rec.report)
	st := rec.wait(t, "0.2.0", 2*time.Minute)
	down := stop()
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
		t.Fatalf("status %s: %s", st.GetStatus(), st.GetErrorMessage())
	}
	if st.GetAgentHasVersion() != "0.2.0" || hex.EncodeToString(st.GetAgentHasHash()) != dg.Hex {
		t.Errorf("agent has %s %x, want 0.2.0 %s", st.GetAgentHasVersion(), st.GetAgentHasHash(), dg.Hex)
	}
	t.Logf("collector downtime during the swap: %s (no answer on its port)", down)
	full := false
	for _, s := range rec.all {
		if s.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Downloading && s.GetDownloadDetails().GetDownloadPercent() == 100 {
			full = true
		}
	}
	if !full {
		t.Error("no Downloading status with the pull's progress (100%) was reported")
	}

	after := assertOneRunning(t, cli, c, "0.2.0")
	if after.ID == before.ID {
		t.Fatal("the container was not replaced")
	}
	if got := instanceUID(t, cli, after.ID); got != uid {
		t.Errorf("instance UID after the swap = %s, want %s", got, uid)
	}
	img, ok := eng.Image()
	if !ok || img.Version != "0.2.0" || img.Digest != dg.String() || img.Hash != dg.Hex {
		t.Errorf("Image() = %+v, want version 0.2.0 digest %s", img, dg)
	}
	checkCarriedOver(t, before, after, "0.2.0")
	if after.State.Health == nil || after.State.Health.Status != container.Healthy {
		t.Errorf("HEALTHCHECK state %+v, want healthy", after.State.Health)
	}

	// The same offer again is already installed: nothing happens.
	rec2 := newRecorder()
	eng.HandlePackages(ctx, offer("0.2.0", "docker://"+ref, hash, k.signBytes([]byte(dg.String())), basicAuth()), rec2.report)
	if st := rec2.wait(t, "0.2.0", 10*time.Second); st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
		t.Errorf("re-offer: %s %s", st.GetStatus(), st.GetErrorMessage())
	}
	if again, _ := inspect(t, cli, c.name); again.ID != after.ID {
		t.Error("a re-offer of the installed image replaced the container")
	}
}

// checkCarriedOver compares the settings the issue lists.
func checkCarriedOver(t testing.TB, before, after container.InspectResponse, version string) {
	t.Helper()
	for _, env := range before.Config.Env {
		if strings.HasPrefix(env, "FAKE_VERSION=") {
			continue // the image's own default
		}
		if !contains(after.Config.Env, env) {
			t.Errorf("env %q lost: %v", env, after.Config.Env)
		}
	}
	if !contains(after.Config.Env, "FAKE_VERSION="+version) {
		t.Errorf("the new image's env default is not used: %v", after.Config.Env)
	}
	if after.Config.Labels["dev.myriarch.test.site"] != "edge-7" {
		t.Errorf("container label lost: %v", after.Config.Labels)
	}
	if after.Config.Labels[ctr.VersionLabel] != version || after.Config.Labels["dev.myriarch.test.image-only"] != version {
		t.Errorf("old image labels leaked into the new container: %v", after.Config.Labels)
	}
	bh, ah := before.HostConfig, after.HostConfig
	if ah.NetworkMode != bh.NetworkMode || ah.RestartPolicy != bh.RestartPolicy || ah.Memory != bh.Memory ||
		ah.LogConfig.Type != bh.LogConfig.Type || ah.LogConfig.Config["max-size"] != bh.LogConfig.Config["max-size"] {
		t.Errorf("host config not carried over:\nbefore %+v\nafter  %+v", bh, ah)
	}
	if len(after.Mounts) != len(before.Mounts) {
		t.Errorf("mounts %v, want %v", after.Mounts, before.Mounts)
	}
	for i := range before.Mounts {
		if i < len(after.Mounts) && (after.Mounts[i].Destination != before.Mounts[i].Destination || after.Mounts[i].Source != before.Mounts[i].Source) {
			t.Errorf("mount %d: %+v, want %+v", i, after.Mounts[i], before.Mounts[i])
		}
	}
	if !strings.HasPrefix(after.Name, "/") || after.Name != before.Name {
		t.Errorf("name %s, want %s", after.Name, before.Name)
	}
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// watchDowntime polls the collector's port every 2 ms and returns a stop
// function giving the longest interval without an answer.
func watchDowntime(port int) func() time.Duration {
	done := make(chan struct{})
	result := make(chan time.Duration, 1)
	go func() {
		var longest time.Duration
		var downSince time.Time
		for {
			select {
			case <-done:
				if !downSince.IsZero() {
					longest = max(longest, time.Since(downSince))
				}
				result <- longest
				return
			default:
			}
			if served(port) == "" {
				if downSince.IsZero() {
					downSince = time.Now()
				}
			} else if !downSince.IsZero() {
				longest = max(longest, time.Since(downSince))
				downSince = time.Time{}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return func() time.Duration { close(done); return <-result }
}

// tarballServer serves image tarballs from dir and counts requests.
func tarballServer(t testing.TB, dir string) (*httptest.Server, *atomic.Int64) {
	n := &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.ServeFile(w, r, filepath.Join(dir, filepath.Base(r.URL.Path)))
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

// publishTarball writes img as a signed tarball into dir and returns its
// file name, SHA-256 and signature.
func publishTarball(t testing.TB, k keys, img v1.Image, ref, dir, file string) (hash, sig []byte) {
	t.Helper()
	path := filepath.Join(dir, file)
	writeTarball(t, img, ref, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return sum[:], k.signBytes(data)
}

// An image tarball over HTTP: the verified download path (hash + minisign),
// then ImageLoad and the version label check. The storage dir here is the
// image's anonymous VOLUME: the engine re-attaches it by name.
func TestUpgradeFromSignedTarball(t *testing.T) {
	t.Parallel()
	cli := testenv.Docker(t)
	ctx := context.Background()
	k := newKeys(t)
	repo := randName("myriarch-ct-img-")
	loadImage(t, cli, fakeImage(t, imageSpec{version: "0.1.0", volume: true}), repo+":0.1.0")
	c := startCollector(t, cli, repo+":0.1.0", false)
	before, _ := inspect(t, cli, c.name)
	uid := instanceUID(t, cli, before.ID)

	dir := t.TempDir()
	hash, sig := publishTarball(t, k, fakeImage(t, imageSpec{version: "0.3.0", volume: true}), repo+":0.3.0", dir, "collector-0.3.0.tar")
	t.Cleanup(func() { removeImage(cli, repo+":0.3.0") })
	srv, _ := tarballServer(t, dir)

	eng := newEngine(t, engineOptions(c, t.TempDir(), k))
	if err := eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	// Unsigned: refused at admission (trust.require_signature).
	rec := newRecorder()
	eng.HandlePackages(ctx, offer("0.3.0", srv.URL+"/collector-0.3.0.tar", hash, nil, nil), rec.report)
	if st := rec.wait(t, "0.3.0", 10*time.Second); st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed ||
		!strings.Contains(st.GetErrorMessage(), "unsigned") {
		t.Fatalf("unsigned offer: %s %q", st.GetStatus(), st.GetErrorMessage())
	}
	rec = newRecorder()
	eng.HandlePackages(ctx, offer("0.3.0", srv.URL+"/collector-0.3.0.tar", hash, sig, nil), rec.report)
	st := rec.wait(t, "0.3.0", 2*time.Minute)
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
		t.Fatalf("status %s: %s", st.GetStatus(), st.GetErrorMessage())
	}
	offerHash := offerHashOf("0.3.0", hash)
	if !bytes.Equal(st.GetServerOfferedHash(), offerHash) || !bytes.Equal(st.GetAgentHasHash(), hash) {
		t.Errorf("server_offered_hash %x, agent_has_hash %x; want the offer hash %x and the content hash %x",
			st.GetServerOfferedHash(), st.GetAgentHasHash(), offerHash, hash)
	}
	after := assertOneRunning(t, cli, c, "0.3.0")
	if got := instanceUID(t, cli, after.ID); got != uid {
		t.Errorf("instance UID after the swap = %s, want %s (anonymous volume not carried over)", got, uid)
	}
	if img, _ := eng.Image(); img.Version != "0.3.0" || img.Digest != "" || img.Hash != hex.EncodeToString(hash) ||
		img.OfferHash != hex.EncodeToString(offerHash) {
		t.Errorf("Image() = %+v", img)
	}
	checkCarriedOver(t, before, after, "0.3.0")
}

// A tarball whose image says another version is refused after loading,
// before anything runs.
func TestTarballVersionLabelMismatch(t *testing.T) {
	t.Parallel()
	cli := testenv.Docker(t)
	ctx := context.Background()
	k := newKeys(t)
	repo := randName("myriarch-ct-img-")
	loadImage(t, cli, fakeImage(t, imageSpec{version: "0.1.0"}), repo+":0.1.0")
	c := startCollector(t, cli, repo+":0.1.0", true)
	before, _ := inspect(t, cli, c.name)
	dir := t.TempDir()
	hash, sig := publishTarball(t, k, fakeImage(t, imageSpec{version: "0.4.1"}), repo+":0.4.1", dir, "c.tar")
	t.Cleanup(func() { removeImage(cli, repo+":0.4.1") })
	srv, _ := tarballServer(t, dir)
	eng := newEngine(t, engineOptions(c, t.TempDir(), k))
	if err := eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	eng.HandlePackages(ctx, offer("0.4.0", srv.URL+"/c.tar", hash, sig, nil), rec.report)
	st := rec.wait(t, "0.4.0", time.Minute)
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), `"0.4.1"`) {
		t.Fatalf("status %s %q, want InstallFailed naming the label", st.GetStatus(), st.GetErrorMessage())
	}
	after := assertOneRunning(t, cli, c, "0.1.0")
	if after.ID != before.ID || after.State.StartedAt != before.State.StartedAt {
		t.Error("the running container was touched")
	}
}

// A new image whose collector exits at once fails the health gate: the new
// container is removed, the old one runs again (with its restart policy
// back), the hash is quarantined.
func TestRollbackWhenNewImageExits(t *testing.T) {
	t.Parallel()
	testRollback(t, imageSpec{version: "0.5.0", exit: true}, "is broken: exiting")
}

// A new image whose Docker HEALTHCHECK reports unhealthy is rolled back.
func TestRollbackWhenNewImageUnhealthy(t *testing.T) {
	t.Parallel()
	testRollback(t, imageSpec{version: "0.5.0", unhealthy: true}, "HEALTHCHECK reports unhealthy")
}

func testRollback(t *testing.T, bad imageSpec, want string) {
	cli := testenv.Docker(t)
	ctx := context.Background()
	k := newKeys(t)
	repo := randName("myriarch-ct-img-")
	loadImage(t, cli, fakeImage(t, imageSpec{version: "0.1.0"}), repo+":0.1.0")
	c := startCollector(t, cli, repo+":0.1.0", true)
	before, _ := inspect(t, cli, c.name)
	uid := instanceUID(t, cli, before.ID)
	dir := t.TempDir()
	hash, sig := publishTarball(t, k, fakeImage(t, bad), repo+":0.5.0", dir, "broken.tar")
	t.Cleanup(func() { removeImage(cli, repo+":0.5.0") })
	srv, hits := tarballServer(t, dir)

	state := t.TempDir()
	eng := newEngine(t, engineOptions(c, state, k))
	if err := eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	eng.HandlePackages(ctx, offer("0.5.0", srv.URL+"/broken.tar", hash, sig, nil), rec.report)
	st := rec.wait(t, "0.5.0", 2*time.Minute)
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed ||
		!strings.Contains(st.GetErrorMessage(), "rolled back") || !strings.Contains(st.GetErrorMessage(), want) {
		t.Fatalf("status %s %q, want InstallFailed rolled back", st.GetStatus(), st.GetErrorMessage())
	}
	if st.GetAgentHasVersion() != "0.1.0" {
		t.Errorf("agent_has_version %q, want 0.1.0", st.GetAgentHasVersion())
	}
	t.Logf("reported: %s", st.GetErrorMessage())
	after := assertOneRunning(t, cli, c, "0.1.0")
	if after.ID != before.ID {
		t.Errorf("the old container %s was replaced by %s", before.ID[:12], after.ID[:12])
	}
	if after.HostConfig.RestartPolicy != before.HostConfig.RestartPolicy {
		t.Errorf("restart policy after the rollback %+v, want %+v", after.HostConfig.RestartPolicy, before.HostConfig.RestartPolicy)
	}
	if got := instanceUID(t, cli, after.ID); got != uid {
		t.Errorf("instance UID = %s, want %s", got, uid)
	}
	if _, err := os.Stat(filepath.Join(state, "install-journal.json")); !os.IsNotExist(err) {
		t.Errorf("journal left behind: %v", err)
	}
	// Quarantined: the same hash is refused at once, without a download.
	n := hits.Load()
	rec = newRecorder()
	eng.HandlePackages(ctx, offer("0.5.0", srv.URL+"/broken.tar", hash, sig, nil), rec.report)
	st = rec.wait(t, "0.5.0", 10*time.Second)
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), "previously failed") {
		t.Errorf("re-offer: %s %q, want previously failed", st.GetStatus(), st.GetErrorMessage())
	}
	if hits.Load() != n {
		t.Error("a quarantined hash was downloaded again")
	}
}

// Digest checks: the URL's digest must be the content_hash (refused before
// any pull), and a digest the registry does not have fails the pull; in
// both cases the running container is untouched.
func TestDigestMismatchRefused(t *testing.T) {
	t.Parallel()
	cli := testenv.Docker(t)
	ctx := context.Background()
	host, pulls := testRegistry(t)
	k := newKeys(t)
	repo := randName("myriarch-ct-img-")
	loadImage(t, cli, fakeImage(t, imageSpec{version: "0.1.0"}), repo+":0.1.0")
	c := startCollector(t, cli, repo+":0.1.0", true)
	before, _ := inspect(t, cli, c.name)
	good := push(t, host, "otel/collector:0.6.0", fakeImage(t, imageSpec{version: "0.6.0"}))
	other := sha256.Sum256([]byte("not the manifest"))

	eng := newEngine(t, engineOptions(c, t.TempDir(), k))
	if err := eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	ref := "docker://" + host + "/otel/collector@" + good.String()
	rec := newRecorder()
	eng.HandlePackages(ctx, offer("0.6.0", ref, other[:], k.signBytes([]byte("sha256:"+hex.EncodeToString(other[:]))), basicAuth()), rec.report)
	st := rec.wait(t, "0.6.0", 10*time.Second)
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), "digest mismatch") {
		t.Fatalf("status %s %q, want InstallFailed digest mismatch", st.GetStatus(), st.GetErrorMessage())
	}
	if pulls.Load() != 0 {
		t.Errorf("%d manifest requests reached the registry for a mismatching offer", pulls.Load())
	}

	// The URL pins the content_hash, but the registry has no such manifest.
	missing := "docker://" + host + "/otel/collector@sha256:" + hex.EncodeToString(other[:])
	rec = newRecorder()
	eng.HandlePackages(ctx, offer("0.6.1", missing, other[:], k.signBytes([]byte("sha256:"+hex.EncodeToString(other[:]))), basicAuth()), rec.report)
	st = rec.wait(t, "0.6.1", time.Minute)
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), "pull") {
		t.Fatalf("status %s %q, want InstallFailed from the pull", st.GetStatus(), st.GetErrorMessage())
	}
	// A signature over another digest is refused before pulling.
	goodHash, _ := hex.DecodeString(good.Hex)
	rec = newRecorder()
	eng.HandlePackages(ctx, offer("0.6.2", ref, goodHash, k.signBytes([]byte("sha256:"+hex.EncodeToString(other[:]))), basicAuth()), rec.report)
	st = rec.wait(t, "0.6.2", time.Minute)
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), "signature") {
		t.Fatalf("status %s %q, want InstallFailed signature", st.GetStatus(), st.GetErrorMessage())
	}
	after := assertOneRunning(t, cli, c, "0.1.0")
	if after.ID != before.ID || after.State.StartedAt != before.State.StartedAt {
		t.Error("the running container was touched")
	}
}

// Containers using settings the updater cannot reproduce are refused with
// the setting named, before anything is downloaded or touched.
func TestUnsupportedSettingRefused(t *testing.T) {
	t.Parallel()
	cli := testenv.Docker(t)
	ctx := context.Background()
	k := newKeys(t)
	repo := randName("myriarch-ct-img-")
	loadImage(t, cli, fakeImage(t, imageSpec{version: "0.1.0"}), repo+":0.1.0")
	dir := t.TempDir()
	hash, sig := publishTarball(t, k, fakeImage(t, imageSpec{version: "0.7.0"}), repo+":0.7.0", dir, "c.tar")
	srv, hits := tarballServer(t, dir)

	for _, tc := range []struct {
		name string
		mod  containerMod
		want string
	}{
		{"auto-remove", func(_ *container.Config, h *container.HostConfig) {
			h.AutoRemove = true
			h.RestartPolicy = container.RestartPolicy{}
		}, "AutoRemove"},
		{"interactive", func(c *container.Config, _ *container.HostConfig) { c.Tty, c.OpenStdin = true, true }, "interactive"},
		{"storage not on a mount", func(_ *container.Config, h *container.HostConfig) { h.Mounts = nil }, "instance UID would be lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCollector(t, cli, repo+":0.1.0", true, tc.mod)
			before, _ := inspect(t, cli, c.name)
			eng := newEngine(t, engineOptions(c, t.TempDir(), k))
			if err := eng.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			eng.HandlePackages(ctx, offer("0.7.0", srv.URL+"/c.tar", hash, sig, nil), rec.report)
			st := rec.wait(t, "0.7.0", time.Minute)
			if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), tc.want) {
				t.Fatalf("status %s %q, want InstallFailed naming %q", st.GetStatus(), st.GetErrorMessage(), tc.want)
			}
			t.Logf("reported: %s", st.GetErrorMessage())
			after := assertOneRunning(t, cli, c, "0.1.0")
			if after.ID != before.ID || after.State.StartedAt != before.State.StartedAt {
				t.Error("the running container was touched")
			}
			if hits.Load() != 0 {
				t.Error("the image was downloaded although the container cannot be reproduced")
			}
			// Not held against the image: a re-offer is judged again.
			rec = newRecorder()
			eng.HandlePackages(ctx, offer("0.7.0", srv.URL+"/c.tar", hash, sig, nil), rec.report)
			if st := rec.wait(t, "0.7.0", time.Minute); !strings.Contains(st.GetErrorMessage(), tc.want) {
				t.Errorf("re-offer: %q, want the setting named again", st.GetErrorMessage())
			}
		})
	}
	t.Run("no such container", func(t *testing.T) {
		eng := newEngine(t, engineOptions(collector{name: randName("myriarch-ct-missing-")}, t.TempDir(), k))
		if err := eng.Recover(ctx); err == nil || !strings.Contains(err.Error(), "no container named") {
			t.Errorf("Recover: %v, want no container named", err)
		}
		rec := newRecorder()
		eng.HandlePackages(ctx, offer("0.7.0", srv.URL+"/c.tar", hash, sig, nil), rec.report)
		if st := rec.wait(t, "0.7.0", time.Minute); !strings.Contains(st.GetErrorMessage(), "no container named") {
			t.Errorf("offer: %s %q", st.GetStatus(), st.GetErrorMessage())
		}
	})
}
