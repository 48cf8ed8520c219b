package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/plan"
)

// maxPlanRequest bounds the body of POST /api/v1/estate/plan.
const maxPlanRequest = 4 << 10

// planRequest is the body of POST /api/v1/estate/plan: a Git revision of
// the estate, or nothing for the estate directory as it is on disk.
type planRequest struct {
	Revision string `json:"revision"`
}

// PlanEstate plans the estate at revision rev (a Git revision; "" for the
// estate directory as it is on disk) against the estate in force, without
// applying it: a candidate that does not load is a plan that lists its
// problems; a revision refused (no such commit, files leaving the estate)
// is an error wrapping estate.ErrRevision. One plan is made at a time per
// instance; another asked meanwhile gets ErrPlanBusy.
func (s *Server) PlanEstate(ctx context.Context, rev string) (plan.Plan, error) {
	if s.opts.Estate == "" {
		return plan.Plan{}, errNoEstate
	}
	select {
	case s.planning <- struct{}{}:
		defer func() { <-s.planning }()
	default:
		return plan.Plan{}, ErrPlanBusy
	}
	s.estateMu.Lock()
	cur := s.estate
	s.estateMu.Unlock()
	source, load := "directory", func() (*estate.Estate, func(), error) {
		e, err := estate.Load(s.opts.Estate)
		return e, func() {}, err
	}
	if rev != "" {
		source = "git"
		load = func() (*estate.Estate, func(), error) { return estate.LoadRevision(ctx, s.opts.Estate, rev) }
	}
	cand, done, err := load()
	var le *estate.LoadError
	switch {
	case errors.As(err, &le):
		tried := plan.Revision{Revision: rev}
		if rev == "" {
			tried.Revision, _ = estate.Revision(s.opts.Estate)
		}
		return plan.Failed(plan.RevisionOf(cur), tried, source, le.Problems), nil
	case err != nil:
		return plan.Plan{}, err
	}
	planned := s.configs.Plan(cand)
	done() // the Blueprints are compiled: the checkout is no longer read
	return plan.Build(cur, cand, source, planned), nil
}

// ErrPlanBusy is a plan asked while this instance makes another.
var ErrPlanBusy = errors.New("a plan is being made on this instance; try again in a moment")

var errNoEstate = errors.New("no estate configured (--estate)")

// planEstate is POST /api/v1/estate/plan.
func (s *Server) planEstate(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil { // nil: the console's request in process, without one
		var err error
		if body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxPlanRequest)); err != nil {
			admin.WriteError(w, http.StatusRequestEntityTooLarge, "the request body is over 4 KiB")
			return
		}
	}
	var req planRequest
	if strings.TrimSpace(string(body)) != "" {
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if !admin.DecodeJSON(w, r, &req) {
			return
		}
	}
	p, err := s.PlanEstate(r.Context(), req.Revision)
	switch {
	case errors.Is(err, ErrPlanBusy):
		w.Header().Set("Retry-After", "2")
		admin.WriteError(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, errNoEstate):
		admin.WriteError(w, http.StatusConflict, err.Error())
	case errors.Is(err, estate.ErrRevision):
		admin.WriteError(w, http.StatusBadRequest, err.Error())
	case err != nil:
		admin.WriteError(w, http.StatusInternalServerError, err.Error())
	default:
		admin.WriteJSON(w, http.StatusOK, p)
	}
}
