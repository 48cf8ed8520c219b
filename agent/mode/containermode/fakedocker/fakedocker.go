// Package fakedocker serves, for tests, the Docker Engine API calls that
// container mode makes to look up the collector's image (ping, container
// and image inspect) on a unix socket.
package fakedocker

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// Container is a container and its image, as the Docker Engine API
// reports them.
type Container struct {
	Ref         string            // Config.Image: what the container names
	Labels      map[string]string // the image's labels
	ImageID     string            // default: derived from the container's name
	RepoDigests []string
}

// Serve serves containers by name until the test ends and returns the
// docker_host URL ("unix://…") to reach them.
func Serve(t *testing.T, containers map[string]Container) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Container{}
	images := map[string]Container{}
	for name, c := range containers {
		if c.ImageID == "" {
			c.ImageID = "sha256:" + strings.Repeat("0", 10) + name
		}
		byName[name], images[c.ImageID] = c, c
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		w.Write([]byte("OK"))
	})
	mux.HandleFunc("GET /containers/{name}/json", func(w http.ResponseWriter, r *http.Request) {
		c, ok := byName[r.PathValue("name")]
		if !ok {
			http.Error(w, `{"message":"No such container: `+r.PathValue("name")+`"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Image": c.ImageID, "Config": map[string]any{"Image": c.Ref, "Labels": c.Labels}})
	})
	mux.HandleFunc("GET /images/{id}/json", func(w http.ResponseWriter, r *http.Request) {
		c, ok := images[r.PathValue("id")]
		if !ok {
			http.Error(w, `{"message":"No such image"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Id": c.ImageID, "RepoDigests": c.RepoDigests, "Config": map[string]any{"Labels": c.Labels}})
	})
	// The client puts the negotiated API version first in every path.
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); ok && strings.HasPrefix(v, "v1.") {
			r.URL.Path = "/" + rest
		}
		mux.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return "unix://" + sock
}
