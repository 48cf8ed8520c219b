package console

import (
	"context"

	"github.com/myriarch/myriarch/server/access"
)

// may reports whether the caller ctx carries (a page's request's) may make
// a request under the rule of pattern, acting on fleet: pages show only
// the buttons it may use (the server refuses the others anyway).
func may(ctx context.Context, pattern, fleet string) bool {
	c, ok := access.CallerFrom(ctx)
	return ok && access.Check(c.Principal, access.Rules[pattern], fleet).Allowed
}
