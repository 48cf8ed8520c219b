package oidclogin

import "fmt"

// Refusal is a sign-in refused: why, in words for the operator and the
// audit trail, and who signed in at the provider when the ID token was
// verified (a sign-in whose claims map to no role).
type Refusal struct {
	Reason string
	Name   string
	err    error
}

func (r *Refusal) Error() string { return r.Reason }
func (r *Refusal) Unwrap() error { return r.err }

func refuse(err error, format string, args ...any) *Refusal {
	return &Refusal{Reason: fmt.Sprintf(format, args...), err: err}
}
