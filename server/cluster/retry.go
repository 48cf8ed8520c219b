package cluster

import (
	"errors"
	"slices"
	"time"
)

// Owed is an error of a handler that names the kind to read again in
// full when it is another than the change's (an agents' reload whose
// following reports' reload failed owes the reports only).
type Owed struct {
	Kind string
	Err  error
}

func (e *Owed) Error() string { return e.Err.Error() }
func (e *Owed) Unwrap() error { return e.Err }

// retries owes a resync to the kinds whose change could not be applied,
// so that nothing waits for the other instances to change it again. A
// kind is read again after a wait that doubles with each failure in a row
// (first to last), and is no longer owed once a resync of it succeeds.
type retries struct {
	first, last time.Duration
	owed        map[string]retry
}

type retry struct {
	at   time.Time // zero while being retried
	wait time.Duration
}

func newRetries(first time.Duration) *retries {
	return &retries{first: first, last: max(first, 30*time.Second), owed: map[string]retry{}}
}

// record takes the outcome of handling c; it returns the kind owed a
// resync and the wait before it, or "" when none is owed.
func (r *retries) record(c Change, err error, now time.Time) (string, time.Duration) {
	if err == nil {
		if c.Resync {
			delete(r.owed, c.Kind)
		}
		return "", 0
	}
	kind := c.Kind
	var owed *Owed
	if errors.As(err, &owed) {
		kind = owed.Kind
	}
	if !slices.Contains(resyncKinds, kind) {
		return "", 0 // requests and answers are not read again
	}
	wait := r.first
	if o, ok := r.owed[kind]; ok {
		wait = min(2*o.wait, r.last)
	}
	r.owed[kind] = retry{at: now.Add(wait), wait: wait}
	return kind, wait
}

// due returns the kinds whose wait is over; they stay owed, with their
// wait, until record is given the outcome of their resync.
func (r *retries) due(now time.Time) []string {
	var kinds []string
	for kind, o := range r.owed {
		if !o.at.IsZero() && !o.at.After(now) {
			kinds = append(kinds, kind)
			r.owed[kind] = retry{wait: o.wait}
		}
	}
	return kinds
}
