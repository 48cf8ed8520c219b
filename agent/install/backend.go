package install

import (
	"context"
	"errors"
	"log/slog"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/journal"
)

// Backend activates one kind of package: it is what differs between
// switching <root>/current to a new collector binary, swapping the collector
// container and replacing the updater's own binary. The Engine runs the
// transaction and calls its back-ends from one goroutine at a time (Recover,
// then the worker): never concurrently, never after Close.
//
// A transaction calls, in order: Stage, Activate, Gate, Commit; Rollback
// when Activate or Gate failed; Abandon when the transaction ends before
// Activate (a failure, or a restart that interrupted it). Recover decides
// how a transaction interrupted at one of the back-end's own journal steps
// continues. Each method records its steps with Txn.Step, so a crash at any
// of them is recovered.
type Backend interface {
	// Describe says what the back-end installs; New calls it once.
	Describe() Description
	// Running reports what runs now (Installed.Version "" when unknown).
	Running(ctx context.Context) (Installed, error)
	// Stage turns the verified artifact (Txn.Artifact) into a version
	// ready to activate and runs its pre-activation check (the new binary's
	// --version, the image's version label, the recreated container's
	// settings). Nothing running is touched.
	Stage(ctx context.Context, t *Txn) error
	// Activate puts the staged version in place of the running one and
	// starts it. It returns ErrRestart when the updater must exit for the
	// new version to run (its health gate then runs at the next start).
	Activate(ctx context.Context, t *Txn) error
	// Gate is the health gate of the activated version, on local signals.
	Gate(ctx context.Context, t *Txn) error
	// Commit makes the activated version the installed one: what an
	// installed record names, what is cleaned up. It is idempotent: the
	// next start repeats it after a crash, or after an error it returned.
	Commit(ctx context.Context, t *Txn) error
	// Rollback puts back what ran before and removes what Stage made. It is
	// idempotent: the next start repeats it after a crash. An error wrapped
	// by Incomplete keeps the transaction for the next start; any other is
	// reported and ends it.
	Rollback(ctx context.Context, t *Txn) error
	// Abandon ends a transaction before its new version ran: it removes
	// what Stage made and makes sure what ran before runs. Idempotent.
	Abandon(ctx context.Context, t *Txn) error
	// Recover says how a transaction the journal recorded at one of the
	// back-end's own steps (t.Record().Step) continues.
	Recover(ctx context.Context, t *Txn) (Resume, error)
}

// Optional capabilities, found by type assertion.
type (
	// Provisioner receives the engine's shared settings and logger before
	// any other call (from New).
	Provisioner interface {
		Provision(env Env) error
	}
	// Admitter refuses offers only the back-end can judge (the form of the
	// download URL), before anything is fetched.
	Admitter interface {
		Admit(p *protobufs.PackageAvailable) error
	}
	// Preparer looks at what runs before anything is fetched. done means
	// the offered version already runs (nothing to install); an error
	// wrapped by Refused is about the host, not the artifact.
	Preparer interface {
		Prepare(ctx context.Context, t *Txn) (done bool, err error)
	}
	// Fetcher acquires artifacts the engine does not download itself (an
	// image pulled by digest). handled false leaves the download to the
	// engine. A Fetcher verifies what it fetched, with Txn.VerifySignature.
	Fetcher interface {
		Fetch(ctx context.Context, t *Txn) (handled bool, err error)
	}
	// Reconciler makes the host consistent at start, after any replay (a
	// leftover container, an interrupted link switch). lost means a
	// transaction may have been interrupted but its journal could not be
	// read: what ran before must be made to run.
	Reconciler interface {
		Reconcile(ctx context.Context, lost bool) error
	}
	// LiveGater judges a version activated by a restart while it runs
	// (the updater itself must stay up a while): a health gate replayed at
	// start runs in the worker, not in Recover, so the updater connects
	// and reports meanwhile. The package counts as being installed until
	// the gate ends.
	LiveGater interface {
		GatesLive() bool
	}
	// RunningConfirmer judges what runs, on the health gate's local
	// signals, before a transaction replaces it: nil when it has stayed up
	// for the health window (waiting out the rest of the window when it
	// started less than that ago). The engine records a version that
	// passes as confirmed healthy, as it does one that passed the gate.
	RunningConfirmer interface {
		ConfirmRunning(ctx context.Context) error
	}
	// Adopter returns a transaction an older updater left without a
	// journal record (nil when there is none), so it is recovered like any
	// other.
	Adopter interface {
		Adopt() (*journal.Record, error)
	}
)

// Description is what a back-end installs.
type Description struct {
	// Package and Type: the offered package it installs.
	Package string
	Type    protobufs.PackageType
	// Kind names its transactions in the journal ("collector", "container",
	// "self").
	Kind string
	// CrashPoints are every point of its transactions where a crash is
	// recovered, in order (see CrashPoints).
	CrashPoints []CrashPoint
	// ByVersion: what runs is known by its version only (the updater
	// itself), so an offer of that version is installed whatever its hash.
	ByVersion bool
}

// Installed is what runs, as a back-end knows it.
type Installed struct {
	Version string
	// Hash is the content hash (hex) it was installed from, "" when it was
	// found running, not installed by the updater.
	Hash string
	// OfferHash is the PackageAvailable.hash (hex) of the offer that
	// installed it, "" in records written before it existed.
	OfferHash string
}

// statusHash is the hex server_offered_hash of a status about in.
func (in Installed) statusHash() string {
	if in.OfferHash != "" {
		return in.OfferHash
	}
	return in.Hash
}

// matches reports whether a status's server_offered_hash names the offer
// that installed in: its offer hash or its content hash.
func (in Installed) matches(offered string) bool {
	return in.Hash != "" && offered != "" && (offered == in.Hash || offered == in.OfferHash)
}

// Resume is how an interrupted transaction continues.
type Resume int

const (
	// Abandon: the new version never ran; keep (or put back) the old one.
	Abandon Resume = iota
	// Gate: the new version was started; judge it with the health gate.
	Gate
	// Commit: the new version passed the health gate; finish.
	Commit
	// RollBack: a rollback was under way; finish it.
	RollBack
)

// Env is what a back-end gets from the engine (Provisioner).
type Env struct {
	// Options are the engine's, with defaults applied.
	Options
	Log *slog.Logger
}

// ErrRestart is returned by Activate when the updater must exit so that
// the service manager starts the new version (a self-update).
var ErrRestart = errors.New("the updater restarts to run the new version")

// incomplete marks a rollback that could not finish.
type incomplete struct{ err error }

func (i *incomplete) Error() string { return i.err.Error() }
func (i *incomplete) Unwrap() error { return i.err }

// Incomplete wraps a Rollback error that must keep the transaction, so
// that the next start tries the rollback again (a container engine that
// did not answer).
func Incomplete(err error) error { return &incomplete{err} }

func isIncomplete(err error) bool {
	var i *incomplete
	return errors.As(err, &i)
}
