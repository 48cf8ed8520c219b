// Package artifacts serves the estate's package files to agents on the OpAMP
// listener, with HTTP Range support, to agents presenting their own credential.
// Only files the catalog references are served, never the rest of the estate,
// and only as regular files inside the estate directory (links resolved).
package artifacts

import (
	"net/http"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/store"
)

// Authenticator checks an agent's credential.
type Authenticator interface {
	Authenticate(r *http.Request) (store.Credential, error)
}

// Handler serves /artifacts/<estate-relative path>.
type Handler struct {
	auth   Authenticator
	prefix string

	mu    sync.RWMutex
	root  string
	files map[string]bool // estate-relative slash paths the catalog references
}

// New returns a handler mounted at prefix (e.g. "/artifacts/").
func New(auth Authenticator, prefix string) *Handler {
	return &Handler{auth: auth, prefix: prefix, files: map[string]bool{}}
}

// SetEstate switches to a newly loaded estate.
func (h *Handler) SetEstate(e *estate.Estate) {
	files := map[string]bool{}
	for _, versions := range e.Packages {
		for _, pv := range versions {
			for _, a := range pv.Artifacts {
				if a.File != "" {
					files[clean(a.File)] = true
				}
			}
			if pv.Image != nil && pv.Image.Archive != nil && pv.Image.Archive.File != "" {
				files[clean(pv.Image.Archive.File)] = true
			}
		}
	}
	h.mu.Lock()
	h.root, h.files = e.Dir, files
	h.mu.Unlock()
}

func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(p)), "/") }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if _, err := h.auth.Authenticate(r); err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="myriarch"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	rel := clean(strings.TrimPrefix(r.URL.Path, h.prefix))
	h.mu.RLock()
	root, ok := h.root, h.files[rel]
	h.mu.RUnlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	// Opened inside the estate: a link out of it (or a FIFO) is not served.
	f, err := estate.OpenFile(root, rel)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, path.Base(rel), st.ModTime(), f)
}
