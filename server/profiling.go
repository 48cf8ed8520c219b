package server

import (
	"net/http/pprof"

	"github.com/myriarch/myriarch/server/admin"
)

// mountProfiling serves Go's runtime profiles on the admin listener, behind
// the admin token: an operator chasing memory or CPU at scale needs them
// from the running server, not from a rebuild.
func mountProfiling(a *admin.API) {
	a.Handle("GET /debug/pprof/", pprof.Index) // and every named profile: heap, goroutine, allocs…
	a.Handle("GET /debug/pprof/cmdline", pprof.Cmdline)
	a.Handle("GET /debug/pprof/profile", pprof.Profile)
	a.Handle("GET /debug/pprof/symbol", pprof.Symbol)
	a.Handle("GET /debug/pprof/trace", pprof.Trace)
}
