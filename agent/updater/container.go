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

// imageVersion asks the Docker Engine API which collector version the
// container runs: the image's org.opencontainers.image.version label, else
// the image tag. A plain HTTP call keeps the updater free of the Docker SDK.
func imageVersion(ctx context.Context, dockerHost, container string) (string, error) {
	client, base, err := dockerClient(dockerHost)
	if err != nil {
		return "", err
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/containers/"+url.PathEscape(container)+"/json", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("container %s: docker API: %w", container, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", fmt.Errorf("container %s: docker API: %s: %s", container, resp.Status, strings.TrimSpace(string(msg)))
	}
	var info struct {
		Config struct {
			Image  string            `json:"Image"`
			Labels map[string]string `json:"Labels"`
		} `json:"Config"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&info); err != nil {
		return "", fmt.Errorf("container %s: decode docker API response: %w", container, err)
	}
	if v := info.Config.Labels["org.opencontainers.image.version"]; v != "" {
		return v, nil
	}
	if tag := imageTag(info.Config.Image); tag != "" {
		return tag, nil
	}
	return "", fmt.Errorf("container %s: image %q has neither an org.opencontainers.image.version label nor a tag", container, info.Config.Image)
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
