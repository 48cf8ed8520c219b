package admin

import (
	"net/http"
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
func (a *API) readyz(w http.ResponseWriter, _ *http.Request) {
	var missing []string
	if a.d.Ready != nil {
		missing = a.d.Ready()
	}
	w.Header().Set("Cache-Control", "no-store")
	if len(missing) > 0 {
		WriteJSON(w, http.StatusServiceUnavailable, ReadyBody{NotReady: missing})
		return
	}
	WriteJSON(w, http.StatusOK, ReadyBody{Ready: true})
}
