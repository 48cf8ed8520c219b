package admin

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// heldResponse holds an answer until it may be sent: a change is answered
// only once its audit record is written.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

var _ http.ResponseWriter = (*heldResponse)(nil)

func newHeldResponse() *heldResponse { return &heldResponse{header: http.Header{}} }

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(b)
}

// errorMessage is the error an ErrorBody answer gives, for the audit
// record's detail.
func (h *heldResponse) errorMessage() string {
	var eb ErrorBody
	if json.Unmarshal(h.body.Bytes(), &eb) == nil {
		return eb.Error
	}
	return http.StatusText(h.status)
}

// sendTo sends the held answer.
func (h *heldResponse) sendTo(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	if h.status == 0 {
		h.status = http.StatusOK
	}
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body.Bytes())
}
