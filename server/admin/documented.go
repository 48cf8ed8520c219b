package admin

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/myriarch/myriarch/server/apispec"
)

// checkedRequest serves h only to a request that matches the API document
// (Deps.Spec); any other is answered 400 naming each field. It runs after
// the guard, so a body is read only once the caller is known and allowed.
func (a *API) checkedRequest(pattern string, h http.HandlerFunc) http.HandlerFunc {
	if a.d.Spec == nil || !a.d.Spec.Has(pattern) {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if err := a.d.Spec.CheckRequest(w, r, pattern); err != nil {
			var p *apispec.Problem
			if errors.As(err, &p) && len(p.Problems) > 1 {
				WriteError(w, http.StatusBadRequest, p.Error(), problemsOf(p)...)
				return
			}
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		h(w, r)
	}
}

func problemsOf(p *apispec.Problem) []error {
	out := make([]error, len(p.Problems))
	for i, s := range p.Problems {
		out[i] = errors.New(s)
	}
	return out
}

// maxCheckedAnswer bounds what an answer check holds of a body; a longer
// body is checked for its status and media type only.
const maxCheckedAnswer = 8 << 20

// checkedAnswer tells Deps.CheckResponse of each answer of h that does not
// match the API document: the tests' net under every route.
func (a *API) checkedAnswer(pattern string, h http.Handler) http.Handler {
	if a.d.CheckResponse == nil || a.d.Spec == nil || !a.d.Spec.Has(pattern) {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tee := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tee, r)
		if tee.status == 0 {
			tee.status = http.StatusOK
		}
		if err := a.d.Spec.CheckResponse(r, pattern, tee.status, w.Header(), tee.body.Bytes(), !tee.over); err != nil {
			a.d.CheckResponse(pattern, err)
		}
	})
}

// teeWriter passes an answer on and keeps its status and (bounded) body.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	over   bool
}

func (t *teeWriter) WriteHeader(status int) {
	if t.status == 0 {
		t.status = status
	}
	t.ResponseWriter.WriteHeader(status)
}

func (t *teeWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	if !t.over {
		if t.body.Len()+len(b) > maxCheckedAnswer {
			t.over = true
			t.body.Reset()
		} else {
			t.body.Write(b)
		}
	}
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes of a
// streamed answer).
func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
