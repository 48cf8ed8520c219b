package updater

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// collectorImage is what the updater reports about the collector's image.
type collectorImage struct {
	Version string // org.opencontainers.image.version label, else the tag
	Digest  string // registry manifest digest (sha256:…), else the image ID
}

// imageVersion asks the Docker Engine API which collector version the
// container runs: the image's org.opencontainers.image.version label, else
// the image tag, and the image's digest. Plain HTTP calls keep the updater
// free of the Docker SDK.
func imageVersion(ctx context.Context, dockerHost, container string) (collectorImage, error) {
	client, base, err := dockerClient(dockerHost)
	if err != nil {
		return collectorImage{}, err
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var info struct {
		Image  string `json:"Image"` // the image ID
		Config struct {
			Image  string            `json:"Image"`
			Labels map[string]string `json:"Labels"`
		} `json:"Config"`
	}
	if err := dockerGet(ctx, client, base+"/containers/"+url.PathEscape(container)+"/json", &info); err != nil {
		return collectorImage{}, fmt.Errorf("container %s: %w", container, err)
	}
	img := collectorImage{Version: info.Config.Labels["org.opencontainers.image.version"], Digest: info.Image}
	if img.Version == "" {
		img.Version = imageTag(info.Config.Image)
	}
	if img.Version == "" {
		return collectorImage{}, fmt.Errorf("container %s: image %q has neither an org.opencontainers.image.version label nor a tag", container, info.Config.Image)
	}
	// A pulled image has a registry manifest digest: that is what offers pin.
	var im struct {
		RepoDigests []string `json:"RepoDigests"`
	}
	if info.Image != "" && dockerGet(ctx, client, base+"/images/"+url.PathEscape(info.Image)+"/json", &im) == nil {
		for _, rd := range im.RepoDigests {
			if _, d, ok := strings.Cut(rd, "@"); ok {
				img.Digest = d
				break
			}
		}
	}
	return img, nil
}

// dockerGet decodes one Docker Engine API answer.
func dockerGet(ctx context.Context, client *http.Client, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("docker API: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("docker API: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(out); err != nil {
		return fmt.Errorf("decode docker API response: %w", err)
	}
	return nil
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

func dockerClient(dockerHost string) (*http.Client, string, error) {
	u, err := url.Parse(dockerHost)
	if err != nil {
		return nil, "", fmt.Errorf("docker host %q: %w", dockerHost, err)
	}
	switch u.Scheme {
	case "unix":
		path := u.Path
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}
		return &http.Client{Transport: tr}, "http://docker", nil
	case "tcp", "http":
		return &http.Client{}, "http://" + u.Host, nil
	case "https":
		return &http.Client{}, "https://" + u.Host, nil
	}
	return nil, "", fmt.Errorf("docker host %q: %w", dockerHost, errors.ErrUnsupported)
}
