package site

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// LoadLoggerImage builds test/e2e/logger statically and loads it into the
// engine as a FROM scratch image named ref.
func LoadLoggerImage(ctx context.Context, cli *client.Client, ref string) error {
	dir, err := os.MkdirTemp("", "myriarch-logger-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	bin := filepath.Join(dir, "logger")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./test/e2e/logger")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(out)))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build logger: %w\n%s", err, b)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "logger", Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg})
	tw.Write(data)
	tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = []string{"/logger"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	return loadImage(ctx, cli, img, ref, dir)
}

func loadImage(ctx context.Context, cli *client.Client, img v1.Image, ref, dir string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "img.tar")
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := cli.ImageLoad(ctx, f, client.ImageLoadWithQuiet(true))
	if err != nil {
		return err
	}
	defer res.Close()
	msg, _ := io.ReadAll(res)
	if !strings.Contains(string(msg), "Loaded image") {
		return fmt.Errorf("image load: %s", msg)
	}
	return nil
}

// RunLogger starts a logger container (no network) printing as name every
// every (0: silent) and returns its id.
func RunLogger(ctx context.Context, cli *client.Client, image, name string, every time.Duration) (string, error) {
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{Image: image, Env: []string{"LOGGER_NAME=" + name, "LOGGER_EVERY=" + every.String()},
			Labels: map[string]string{"dev.myriarch.test": "logger"}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return "", fmt.Errorf("start %s: %w", name, err)
	}
	return res.ID, nil
}

// RemoveContainer stops and removes a container.
func RemoveContainer(ctx context.Context, cli *client.Client, id string) error {
	_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	return err
}

// RemoveLoggers removes every logger container on the engine: those of a
// run that was killed before its cleanup. Call it holding the engine alone.
func RemoveLoggers(ctx context.Context, cli *client.Client) error {
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "dev.myriarch.test=logger")})
	if err != nil {
		return fmt.Errorf("list logger containers: %w", err)
	}
	for _, c := range list.Items {
		if err := RemoveContainer(ctx, cli, c.ID); err != nil {
			return fmt.Errorf("remove logger container %s: %w", c.ID, err)
		}
	}
	return nil
}
