package container_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/internal/testcert"
	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
)

const (
	imageVersion = "9.8.7"
	imageUser    = "65532:65532"
	caBundle     = "/etc/ssl/certs/ca-certificates.crt"
)

// imageContext prepares the build context packaging/docker/Dockerfile.<name> documents:
// the static binary of cmd/<binary> (version imageVersion), the host's CA bundle, an
// empty directory and the files given (context name -> repository path).
func imageContext(t *testing.T, binary string, files map[string]string, more ...string) string {
	t.Helper()
	testenv.Tool(t, "docker", "docker.io")
	dir := t.TempDir()
	for _, b := range append([]string{binary}, more...) {
		cmd := exec.Command("go", "build", "-trimpath",
			"-ldflags", "-s -w -X github.com/myriarch/myriarch/internal/buildinfo.Version="+imageVersion,
			"-o", filepath.Join(dir, b), "../../cmd/"+b)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ca-certificates.crt"), testenv.File(t, caBundle, "ca-certificates"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		copyFile(t, src, filepath.Join(dir, name), 0o644)
	}
	return dir
}

// buildImage builds packaging/docker/<dockerfile> from ctx and returns its tag.
func buildImage(t *testing.T, cli *client.Client, dockerfile, ctx string) string {
	t.Helper()
	tag := randName("myriarch-ct-img-") + ":" + imageVersion
	dockerBuild(t, dockerfile, imageVersion, tag, ctx)
	t.Cleanup(func() { removeImage(cli, tag) })
	return tag
}

// checkImageConfig checks what every myriarch image declares: the non-root user, the
// OCI labels, its volume and its entry point.
func checkImageConfig(t *testing.T, cli *client.Client, tag, title, volume string, entrypoint, cmd []string) {
	t.Helper()
	img, err := cli.ImageInspect(context.Background(), tag)
	if err != nil {
		t.Fatal(err)
	}
	c := img.Config
	if c.User != imageUser {
		t.Errorf("User %q, want %q", c.User, imageUser)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":   title,
		"org.opencontainers.image.version": imageVersion,
		"org.opencontainers.image.source":  "https://github.com/myriarch/myriarch",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, c.Labels[k], v)
		}
	}
	if c.Labels["org.opencontainers.image.description"] == "" {
		t.Error("no org.opencontainers.image.description label")
	}
	if _, ok := c.Volumes[volume]; !ok || len(c.Volumes) != 1 {
		t.Errorf("volumes %v, want %s", c.Volumes, volume)
	}
	if !slices.Equal(c.Entrypoint, entrypoint) || !slices.Equal(c.Cmd, cmd) {
		t.Errorf("entrypoint %q cmd %q, want %q %q", c.Entrypoint, c.Cmd, entrypoint, cmd)
	}
}

// fileIn reads one entry of a (created or running) container through the engine.
func fileIn(t *testing.T, cli *client.Client, id, path string) (*tar.Header, []byte) {
	t.Helper()
	res, err := cli.CopyFromContainer(context.Background(), id, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		t.Fatalf("%s in the container: %v", path, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	return h, data
}

// createContainer creates (without starting) a container of image, removed with its
// volumes when the test ends.
func createContainer(t *testing.T, cli *client.Client, cfg *container.Config, host *container.HostConfig) string {
	t.Helper()
	name := randName("myriarch-ct-")
	t.Cleanup(func() { removeWithVolumes(cli, name) })
	created, err := cli.ContainerCreate(context.Background(), client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: host})
	if err != nil {
		t.Fatal(err)
	}
	return created.ID
}

// checkImageFiles checks the CA bundle (the host's, byte for byte) and that the volume
// directory belongs to the image's user.
func checkImageFiles(t *testing.T, cli *client.Client, id, volume string) {
	t.Helper()
	if _, got := fileIn(t, cli, id, caBundle); !bytes.Equal(got, testenv.File(t, caBundle, "ca-certificates")) {
		t.Errorf("%s in the image differs from the build context's", caBundle)
	}
	for _, dir := range []string{volume, "/tmp"} {
		if h, _ := fileIn(t, cli, id, dir); h.Typeflag != tar.TypeDir || h.Uid != 65532 || h.Gid != 65532 {
			t.Errorf("%s: type %c owner %d:%d, want a directory of 65532:65532", dir, h.Typeflag, h.Uid, h.Gid)
		}
	}
}

// processIDs reads the real uid and gid of a host process.
func processIDs(t *testing.T, pid int) (uid, gid string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "Uid:" {
			uid = f[1]
		}
		if len(f) >= 2 && f[0] == "Gid:" {
			gid = f[1]
		}
	}
	return uid, gid
}

// serverCertificate writes a self-signed certificate for 127.0.0.1 and its key into a
// directory the image's user can read, returning the directory and a pool trusting it.
func serverCertificate(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	c, err := testcert.Loopback(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The bind-mounted directory itself must let uid 65532 in.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": c.CertPEM, "tls.key": c.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, c.Pool
}

// The myriarchd image: its declared user, labels, ports and command; by default it
// refuses to start without a TLS certificate; with one mounted it serves OpAMP over TLS
// and /healthz on the admin port, as uid 65532, writing its state into the volume.
func TestMyriarchdImage(t *testing.T) {
	t.Parallel()
	cli := testenv.Docker(t)
	ctx := imageContext(t, "myriarchd", map[string]string{"myriarchd.yaml": "../../packaging/config/myriarchd.yaml"})
	tag := buildImage(t, cli, "Dockerfile.myriarchd", ctx)
	checkImageConfig(t, cli, tag, "myriarchd", "/var/lib/myriarch",
		[]string{"/usr/bin/myriarchd"}, []string{"serve", "--config", "/etc/myriarch/myriarchd.yaml"})
	img, err := cli.ImageInspect(context.Background(), tag)
	if err != nil {
		t.Fatal(err)
	}
	var exposed []string
	for p := range img.Config.ExposedPorts {
		exposed = append(exposed, string(p))
	}
	if slices.Sort(exposed); !slices.Equal(exposed, []string{"4320/tcp", "4321/tcp"}) {
		t.Errorf("exposed ports %v, want 4320/tcp and 4321/tcp", exposed)
	}
	if out := dockerCLI(t, "run", "--rm", "--network", "none", tag, "version"); !strings.Contains(out, imageVersion) {
		t.Errorf("myriarchd version printed %q", out)
	}

	t.Run("default refuses to serve without TLS", func(t *testing.T) {
		// TLS is read before anything listens, so no network is needed to see it.
		cmd := exec.Command("docker", "run", "--rm", "--network", "none", tag)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "/etc/myriarch/tls/tls.crt") {
			t.Errorf("default command without a certificate: %v\n%s", err, out)
		}
	})

	t.Run("serves with a certificate", func(t *testing.T) {
		tlsDir, pool := serverCertificate(t)
		estate := t.TempDir()
		if err := os.Chmod(estate, 0o755); err != nil {
			t.Fatal(err)
		}
		opamp, admin := freePort(t), freePort(t)
		// The image's configuration, with the listeners moved to free loopback ports by
		// variables (which win over the file).
		id := createContainer(t, cli, &container.Config{
			Image: tag,
			Env: []string{"MYRIARCH_LISTEN=127.0.0.1:" + strconv.Itoa(opamp),
				"MYRIARCH_ADMIN_LISTEN=127.0.0.1:" + strconv.Itoa(admin)},
		}, &container.HostConfig{
			NetworkMode: "host",
			Mounts: []mount.Mount{
				{Type: mount.TypeBind, Source: tlsDir, Target: "/etc/myriarch/tls", ReadOnly: true},
				{Type: mount.TypeBind, Source: estate, Target: "/etc/myriarch/estate", ReadOnly: true},
			},
		})
		checkImageFiles(t, cli, id, "/var/lib/myriarch")
		if _, err := cli.ContainerStart(context.Background(), id, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		healthz := "http://127.0.0.1:" + strconv.Itoa(admin) + "/healthz"
		var body string
		testkit.WaitWithin(t, 30*time.Second, healthz+" answering 200", func() bool {
			resp, err := probeClient.Get(healthz)
			if err != nil {
				if c, ok := inspect(t, cli, id); ok && !c.State.Running {
					logs, _ := exec.Command("docker", "logs", id).CombinedOutput()
					t.Fatalf("myriarchd exited (%d):\n%s", c.State.ExitCode, logs)
				}
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return resp.StatusCode == http.StatusOK
		})
		if strings.TrimSpace(body) != "ok" {
			t.Errorf("/healthz answered %q", body)
		}
		conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(opamp), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Errorf("OpAMP listener: TLS with the mounted certificate: %v", err)
		} else {
			conn.Close()
		}

		c, _ := inspect(t, cli, id)
		if c.Config.User != imageUser {
			t.Errorf("container User %q", c.Config.User)
		}
		if uid, gid := processIDs(t, c.State.Pid); uid != "65532" || gid != "65532" {
			t.Errorf("myriarchd runs as uid %s gid %s, want 65532", uid, gid)
		}
		if h, tok := fileIn(t, cli, id, "/var/lib/myriarch/admin.token"); h.Uid != 65532 || h.Mode&0o077 != 0 || !bytes.HasPrefix(tok, []byte("myradm_")) {
			t.Errorf("admin token in the volume: owner %d mode %o", h.Uid, h.Mode)
		}
	})
}

// The updater image: its declared user, labels and volume, the CA bundle, state and /tmp
// owned by its user, and its version.
func TestUpdaterImage(t *testing.T) {
	t.Parallel()
	cli := testenv.Docker(t)
	tag := buildImage(t, cli, "Dockerfile.updater", imageContext(t, "myriarch-updater", nil, "myriarch-sigstore"))
	checkImageConfig(t, cli, tag, "myriarch-updater", "/var/lib/myriarch-updater",
		[]string{"/usr/bin/myriarch-updater"}, []string{"run", "--config", "/etc/myriarch/updater.yaml"})
	if out := dockerCLI(t, "run", "--rm", "--network", "none", tag, "version"); !strings.Contains(out, imageVersion) {
		t.Fatalf("updater image `version` printed %q", out)
	}
	id := createContainer(t, cli, &container.Config{Image: tag}, &container.HostConfig{NetworkMode: "none"})
	checkImageFiles(t, cli, id, "/var/lib/myriarch-updater")
}
