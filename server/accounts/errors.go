package accounts

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/store"
)

// Error is a refused request, with the HTTP status it is answered with.
type Error struct {
	Status int
	Msg    string
	// Need is the role a refusal for rights asks for ("" otherwise).
	Need string
	Err  error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

func beyondRights(by access.Principal, want access.Principal) *Error {
	scope := "every fleet"
	if want.Scoped() {
		scope = fmt.Sprintf("fleets %v", want.Fleets)
	}
	return &Error{Status: http.StatusForbidden, Need: want.Role.String(),
		Msg: fmt.Sprintf("%s cannot grant the %s role on %s: a principal never grants more than it has (%s%s)",
			by.Actor(), want.Role, scope, by.Role, scopeNote(by))}
}

func scopeNote(p access.Principal) string {
	if p.Scoped() {
		return fmt.Sprintf(" on fleets %v", p.Fleets)
	}
	return " on every fleet"
}

// fromStore turns a store error into its answer.
func fromStore(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Msg: "no " + what, Err: err}
	case errors.Is(err, store.ErrConflict):
		return &Error{Status: http.StatusConflict, Msg: what + " exists already", Err: err}
	case errors.Is(err, store.ErrLastAdmin):
		return &Error{Status: http.StatusConflict, Msg: "refused: " + err.Error(), Err: err}
	}
	return err
}
