package admin

import (
	"net/http"
	"strings"
)

// healthz answers whether the process serves HTTP at all: 200 "ok".
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}

// ReadyBody is the JSON of GET /readyz.
type ReadyBody struct {
	Ready bool `json:"ready"`
	// NotReady names what is missing ("store not open", "OpAMP listener not serving").
	NotReady []string `json:"notReady,omitempty"`
}

// readyz answers 200 when the server is ready to serve agents and
// operators, else 503 naming what is not.
func (a *API) readyz(w http.ResponseWriter, r *http.Request) { readyz(a.d.Ready)(w, r) }

func readyz(ready func() []string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		var missing []string
		if ready != nil {
			missing = ready()
		}
		w.Header().Set("Cache-Control", "no-store")
		if len(missing) > 0 {
			WriteJSON(w, http.StatusServiceUnavailable, ReadyBody{NotReady: missing})
			return
		}
		WriteJSON(w, http.StatusOK, ReadyBody{Ready: true})
	}
}

// Starting is the admin listener of a server that cannot build its API
// yet (its store is not reachable): /healthz and /readyz as usual (ready
// names what is missing), every other route 503.
func Starting(ready func() []string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", readyz(ready))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "5")
		WriteError(w, http.StatusServiceUnavailable, "myriarchd is starting: "+strings.Join(ready(), "; "))
	})
	return mux
}
