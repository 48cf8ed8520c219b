package containermode

import (
	"context"
	"fmt"
	"strings"
	"time"

	ctr "github.com/myriarch/myriarch/agent/install/container"
)

// collectorImage is what container mode reports about the collector's image.
type collectorImage struct {
	Version string // org.opencontainers.image.version label, else the tag
	Digest  string // registry manifest digest (sha256:…), else the image ID
}

// imageVersion asks the Docker Engine API (through the client the
// container install back-end uses) which collector version the container
// runs: the image's org.opencontainers.image.version label, else the image
// tag, and the image's registry digest, else its ID.
func imageVersion(ctx context.Context, dockerHost, name string) (collectorImage, error) {
	dc, err := ctr.NewClient(dockerHost)
	if err != nil {
		return collectorImage{}, err
	}
	defer dc.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := ctr.InspectRunning(ctx, dc, name)
	if err != nil {
		return collectorImage{}, err
	}
	img := collectorImage{Version: info.Version, Digest: info.Digest}
	if img.Version == "" {
		img.Version = imageTag(info.Ref)
	}
	if img.Version == "" {
		return collectorImage{}, fmt.Errorf("container %s: image %q has neither an %s label nor a tag", name, info.Ref, ctr.VersionLabel)
	}
	if img.Digest == "" {
		img.Digest = info.ID
	}
	return img, nil
}

// imageTag returns the tag of an image reference ("repo:5000/otel/c:0.149.0@sha256:…" → "0.149.0").
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[colon+1:]
	}
	return ""
}
