package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxAPIResponse bounds what the console reads of one admin API answer.
const maxAPIResponse = 32 << 20

// apiClient calls the admin API in process: the same handler, routes,
// validation and rules the CLI reaches over HTTP, so every console action
// takes the CLI's code path. A call acts as the caller its context carries
// (the session's principal, set by page and action).
type apiClient struct {
	h http.Handler
}

// apiError is a non-2xx answer of the admin API.
type apiError struct {
	Status  int
	Message string
	Details []string
}

func (e *apiError) Error() string {
	msg := e.Message
	if len(e.Details) > 0 {
		msg += ": " + strings.Join(e.Details, "; ")
	}
	return msg
}

// notFound reports whether err is a 404 of the API (no such object or route).
func notFound(err error) bool {
	ae, ok := err.(*apiError)
	return ok && ae.Status == http.StatusNotFound
}

// call sends one request and returns the raw 2xx body.
func (c *apiClient) call(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}}
	c.h.ServeHTTP(rec, req)
	if rec.overflow {
		return nil, fmt.Errorf("%s %s: answer larger than %d bytes", method, path, maxAPIResponse)
	}
	if rec.status()/100 != 2 {
		e := &apiError{Status: rec.status()}
		var eb struct {
			Error   string   `json:"error"`
			Details []string `json:"details"`
		}
		if json.Unmarshal(rec.body.Bytes(), &eb) == nil && eb.Error != "" {
			e.Message, e.Details = eb.Error, eb.Details
		} else {
			e.Message = fmt.Sprintf("%s %s: %d %s", method, path, rec.status(), bytes.TrimSpace(rec.body.Bytes()))
		}
		return nil, e
	}
	return rec.body.Bytes(), nil
}

// get decodes a 2xx JSON answer into out.
func (c *apiClient) get(ctx context.Context, path string, out any) error {
	b, err := c.call(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// recorder is the ResponseWriter of an in-process call.
type recorder struct {
	header   http.Header
	code     int
	body     bytes.Buffer
	overflow bool
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.body.Len()+len(p) > maxAPIResponse {
		r.overflow = true
		return 0, fmt.Errorf("answer larger than %d bytes", maxAPIResponse)
	}
	return r.body.Write(p)
}
func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}
