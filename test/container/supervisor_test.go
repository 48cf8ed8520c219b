package container_test

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	ctr "github.com/myriarch/myriarch/agent/install/container"
	"github.com/myriarch/myriarch/agent/supervisorstate"
	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

const packagingDir = "../../packaging/docker"

// dockerCLI runs the docker CLI against DOCKER_HOST (classic builder: the
// private engine has no BuildKit).
func dockerCLI(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// dockerBuild builds packaging/docker/<dockerfile> from ctx as tag with the
// legacy builder and without its cache. Tests build images in parallel and
// remove them with their untagged parents: a cached intermediate image shared
// between two builds (every Dockerfile here starts FROM scratch with the same
// ARG) could be removed by one test while another build reuses it.
func dockerBuild(t testing.TB, dockerfile, version, tag, ctx string) {
	t.Helper()
	dockerCLI(t, "build", "-q", "--no-cache", "-f", filepath.Join(packagingDir, dockerfile), "--build-arg", "VERSION="+version, "-t", tag, ctx)
}

func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, mode); err != nil {
		t.Fatal(err)
	}
}

// buildSupervisorImage builds packaging/docker/Dockerfile.collector from
// the peers' static supervisor and collector binaries.
func buildSupervisorImage(t testing.TB, p *peerbuild.Peers, c peerbuild.Collector, tag string) {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, p.Supervisor, filepath.Join(dir, "opampsupervisor"), 0o755)
	if err := c.InstallTo(filepath.Join(dir, "otelcol-myriarch")); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(packagingDir, "supervisor.yaml"), filepath.Join(dir, "supervisor.yaml"), 0o644)
	dockerBuild(t, "Dockerfile.collector", c.Version, tag, dir)
}

// collectorRuns reports whether the container runs the collector's real
// run (the supervisor passes --config <storage>/effective.yaml).
func collectorRuns(t testing.TB, cli *client.Client, id string) bool {
	top, err := cli.ContainerTop(context.Background(), id, client.ContainerTopOptions{})
	if err != nil {
		return false
	}
	for _, p := range top.Processes {
		line := strings.Join(p, " ")
		if strings.Contains(line, "/otelcol/otelcol-myriarch") && strings.Contains(line, "effective.yaml") {
			return true
		}
	}
	return false
}

// The real upstream OpAMP Supervisor v0.149.0 with real collectors, in the
// FROM scratch image of packaging/docker: m.1 → m.2 from a signed image
// tarball keeps the supervisor's instance UID; the broken m.3 (the
// supervisor cannot bootstrap it and exits) is rolled back to m.2.
func TestRealSupervisorImage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the upstream OpAMP Supervisor image; not in -short mode")
	}
	cli := testenv.Docker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	peers, err := peerbuild.Ensure(ctx, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatalf("build peers: %v (run `make peers` first)", err)
	}
	m1, _ := peers.Collector(peerbuild.VersionM1)
	m2, _ := peers.Collector(peerbuild.VersionM2)
	broken, _ := peers.Collector(peerbuild.VersionBroken)
	repo := randName("myriarch-ct-otelcol-")
	k := newKeys(t)
	dir := t.TempDir()
	var hashes, sigs [][]byte
	for _, c := range []peerbuild.Collector{m1, m2, broken} {
		tag := repo + ":" + c.Version
		buildSupervisorImage(t, peers, c, tag)
		t.Cleanup(func() { removeImage(cli, tag) })
		if c.Version == m1.Version {
			continue
		}
		// The updater loads m.2 and m.3 from signed tarballs.
		path := filepath.Join(dir, c.Version+".tar")
		dockerCLI(t, "save", "-o", path, tag)
		dockerCLI(t, "rmi", tag)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		hashes, sigs = append(hashes, sum[:]), append(sigs, k.signBytes(data))
	}
	srv, _ := tarballServer(t, dir)

	storage := t.TempDir()
	name := randName("myriarch-ct-sup-")
	t.Cleanup(func() {
		for _, n := range []string{name, name + ctr.NextSuffix} {
			cli.ContainerRemove(context.Background(), n, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	})
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name,
		Config: &container.Config{Image: repo + ":" + m1.Version, Env: []string{
			"OPAMP_SERVER_ENDPOINT=ws://127.0.0.1:" + strconv.Itoa(freePort(t)) + "/v1/opamp", // nobody listens: local signals only
			"OPAMP_SERVER_TOKEN=enroll-123", "OTELCOL_METRICS_LEVEL=none",
		}},
		HostConfig: &container.HostConfig{
			NetworkMode:   "host",
			RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyUnlessStopped},
			Mounts:        []mount.Mount{{Type: mount.TypeBind, Source: storage, Target: storageDir}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, 90*time.Second, "the supervisor to run the m.1 collector", func() bool { return collectorRuns(t, cli, created.ID) })
	st0, err := supervisorstate.Read(storage)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("supervisor instance UID %s", st0.InstanceID)

	o := engineOptions(collector{name: name}, t.TempDir(), k)
	o.install.HealthWindow = 8 * time.Second // the supervisor gives up on a broken collector after its 3 s bootstrap timeout
	eng := newEngine(t, o)
	if err := eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if img, _ := eng.Image(); img.Version != m1.Version {
		t.Fatalf("Image() = %+v, want %s", img, m1.Version)
	}

	rec := newRecorder()
	stop := watchCollectorGap(cli, name)
	eng.HandlePackages(ctx, offer(m2.Version, srv.URL+"/"+m2.Version+".tar", hashes[0], sigs[0], nil), rec.report)
	st := rec.wait(t, m2.Version, 5*time.Minute)
	testkit.WaitWithin(t, 60*time.Second, "the supervisor to run the m.2 collector", func() bool {
		c, ok := inspect(t, cli, name)
		return ok && collectorRuns(t, cli, c.ID)
	})
	t.Logf("real collector not running (its real run under the supervisor) during the swap: %s", stop())
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
		t.Fatalf("m.2: %s %s", st.GetStatus(), st.GetErrorMessage())
	}
	cur, _ := inspect(t, cli, name)
	if cur.ID == created.ID || !cur.State.Running || cur.Config.Labels[ctr.VersionLabel] != m2.Version {
		t.Fatalf("after m.2: container %s running=%v label %q", cur.ID[:12], cur.State.Running, cur.Config.Labels[ctr.VersionLabel])
	}
	testkit.WaitWithin(t, 60*time.Second, "the supervisor to run the m.2 collector", func() bool { return collectorRuns(t, cli, cur.ID) })
	st1, err := supervisorstate.Read(storage)
	if err != nil || st1.InstanceID != st0.InstanceID {
		t.Fatalf("instance UID after the swap: %q (%v), want %s", st1.InstanceID, err, st0.InstanceID)
	}

	rec = newRecorder()
	eng.HandlePackages(ctx, offer(broken.Version, srv.URL+"/"+broken.Version+".tar", hashes[1], sigs[1], nil), rec.report)
	st = rec.wait(t, broken.Version, 5*time.Minute)
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), "rolled back") {
		t.Fatalf("m.3: %s %q, want a rollback", st.GetStatus(), st.GetErrorMessage())
	}
	t.Logf("m.3 reported: %s", st.GetErrorMessage())
	back, _ := inspect(t, cli, name)
	if back.ID != cur.ID || !back.State.Running {
		t.Fatalf("after the rollback %s (running=%v), want %s running", back.ID[:12], back.State.Running, cur.ID[:12])
	}
	if _, ok := inspect(t, cli, name+ctr.NextSuffix); ok {
		t.Fatal("the broken container was not removed")
	}
	testkit.WaitWithin(t, 60*time.Second, "the supervisor to run the m.2 collector again", func() bool { return collectorRuns(t, cli, back.ID) })
	if st2, err := supervisorstate.Read(storage); err != nil || st2.InstanceID != st0.InstanceID {
		t.Fatalf("instance UID after the rollback: %q (%v), want %s", st2.InstanceID, err, st0.InstanceID)
	}
}

// watchCollectorGap polls (every 50 ms) whether the collector's real run is
// up in <name> or <name>-next and returns a stop function giving the
// longest interval without it.
func watchCollectorGap(cli *client.Client, name string) func() time.Duration {
	done := make(chan struct{})
	result := make(chan time.Duration, 1)
	runs := func() bool {
		for _, n := range []string{name, name + ctr.NextSuffix} {
			top, err := cli.ContainerTop(context.Background(), n, client.ContainerTopOptions{})
			if err != nil {
				continue
			}
			for _, p := range top.Processes {
				line := strings.Join(p, " ")
				if strings.Contains(line, "/otelcol/otelcol-myriarch") && strings.Contains(line, "effective.yaml") {
					return true
				}
			}
		}
		return false
	}
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
			case <-time.After(50 * time.Millisecond):
			}
			if !runs() {
				if downSince.IsZero() {
					downSince = time.Now()
				}
			} else if !downSince.IsZero() {
				longest = max(longest, time.Since(downSince))
				downSince = time.Time{}
			}
		}
	}()
	return func() time.Duration { close(done); return <-result }
}
