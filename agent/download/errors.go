package download

import (
	"errors"
	"fmt"
)

var (
	// ErrTooLarge: the artifact exceeds Options.MaxSize.
	ErrTooLarge = errors.New("artifact exceeds the size cap")
	// ErrNoSpace: not enough free disk space for the artifact.
	ErrNoSpace = errors.New("not enough free disk space")
	// ErrTooManyRedirects: the redirect chain is too long (or loops).
	ErrTooManyRedirects = errors.New("too many redirects")
	// ErrStalled: the connection delivered nothing, or too little, for too long.
	ErrStalled = errors.New("download stalled")
)

// StatusError is an HTTP response status that is not a success.
type StatusError struct {
	Code   int
	Status string
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP status %s", e.Status) }

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

func isPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// retryableStatus reports whether an HTTP status may succeed on retry:
// request timeouts, rate limits and server-side errors.
func retryableStatus(code int) bool {
	return code == 408 || code == 429 || code >= 500
}
