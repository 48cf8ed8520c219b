package install

import (
	"errors"
	"fmt"
)

// Fault classifies why a transaction failed: what it costs the offered
// hash in the quarantine.
type Fault int

const (
	// Transient faults (network, registry, disk, an interruption) delay a
	// retry of the same hash, with a backoff.
	Transient Fault = iota
	// Artifact faults (hash, signature, archive, version, health) block the
	// hash until the server offers another one.
	Artifact
	// Refused faults are about the host, not the artifact (a container
	// setting that cannot be reproduced): reported, never quarantined.
	Refused
)

func (f Fault) String() string {
	switch f {
	case Artifact:
		return "artifact"
	case Refused:
		return "refused"
	}
	return "transient"
}

// Failure is an error with its fault class.
type Failure struct {
	Fault Fault
	Err   error
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// Fail classes err (nil stays nil).
func Fail(f Fault, err error) error {
	if err == nil {
		return nil
	}
	return &Failure{Fault: f, Err: err}
}

// Failf classes a new error; %w keeps a cause.
func Failf(f Fault, format string, a ...any) error {
	return &Failure{Fault: f, Err: fmt.Errorf(format, a...)}
}

// FaultOf is the class of err: Transient unless it says otherwise.
func FaultOf(err error) Fault {
	var f *Failure
	if errors.As(err, &f) {
		return f.Fault
	}
	return Transient
}
