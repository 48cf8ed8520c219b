package admin

import (
	"errors"

	"github.com/myriarch/myriarch/server/estate"
)

// estateError renders a failed reload with every problem and where it is.
func estateError(err error) map[string]any {
	var le *estate.LoadError
	if errors.As(err, &le) {
		return map[string]any{"error": "estate not reloaded; the previous estate stays in force", "problems": le.Problems}
	}
	return map[string]any{"error": "estate not reloaded; the previous estate stays in force: " + err.Error(), "problems": []estate.Problem{}}
}
