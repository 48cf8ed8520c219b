package containermode

import (
	"context"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/agent/mode/containermode/fakedocker"
)

const versionLabel = "org.opencontainers.image.version"

var feed = "sha256:" + strings.Repeat("fe", 32)

func TestImageVersion(t *testing.T) {
	host := fakedocker.Serve(t, map[string]fakedocker.Container{
		"labelled": {Ref: "otel/opentelemetry-collector-contrib:latest", Labels: map[string]string{versionLabel: "0.149.0"}},
		"tagged":   {Ref: "registry.local:5000/otel/otelcol-contrib:0.148.1@sha256:abcd"},
		"untagged": {Ref: "otel/otelcol-contrib"},
		"pulled": {Ref: "registry.local:5000/otel/otelcol:0.149.1", Labels: map[string]string{versionLabel: "0.149.1"},
			ImageID: "sha256:img1", RepoDigests: []string{"registry.local:5000/otel/otelcol@" + feed}},
		"loaded": {Ref: "otelcol:0.149.2", ImageID: "sha256:img2"},
	})
	ctx := context.Background()
	for name, want := range map[string]string{"labelled": "0.149.0", "tagged": "0.148.1"} {
		if got, err := imageVersion(ctx, host, name); err != nil || got.Version != want {
			t.Errorf("imageVersion(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	if got, err := imageVersion(ctx, host, "pulled"); err != nil || got.Digest != feed || got.Version != "0.149.1" {
		t.Errorf("pulled image = %+v, %v; want the registry digest", got, err)
	}
	if got, err := imageVersion(ctx, host, "loaded"); err != nil || got.Digest != "sha256:img2" || got.Version != "0.149.2" {
		t.Errorf("loaded image = %+v, %v; want the image ID as digest", got, err)
	}
	if _, err := imageVersion(ctx, host, "untagged"); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("untagged: err = %v", err)
	}
	if _, err := imageVersion(ctx, host, "missing"); err == nil || !strings.Contains(err.Error(), "No such container") {
		t.Errorf("missing: err = %v", err)
	}
	if _, err := imageVersion(ctx, "npipe:////./pipe/docker_engine", "x"); err == nil {
		t.Error("npipe accepted on this platform")
	}
}
