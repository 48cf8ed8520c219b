// Package installtest is the contract suite of the install back-ends
// (agent/install): one set of tests every back-end runs, in the manner of
// opamp-go's tests that run against each client implementation.
//
// A back-end's tests describe it with a Fixture (how to start an
// installation running an old version, build artifacts, build the engine)
// and call Run. The suite then SIGKILLs a real updater process at every
// crash point the back-end lists (CrashPoints), recovers with a new one and
// checks the end state (what runs, the reported status, the journal, the
// quarantine, the installed record, the back-end's own invariants), and
// offers every kind of bad package, checking that each is refused with a
// clear message while what runs is untouched.
//
// The package's TestMain must call Child first: the suite runs the test
// binary itself as the updater process.
package installtest

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
)

// Fixture describes one back-end to the suite.
type Fixture struct {
	// Name identifies the fixture (the child process finds it by name).
	Name string
	// Package and Type are what the back-end installs.
	Package string
	Type    protobufs.PackageType
	// CrashPoints are the back-end's (its Description's).
	CrashPoints []install.CrashPoint
	// StatePrefix is the engine's (install.Options.StatePrefix).
	StatePrefix string
	// Serial runs the crash points one after the other (sites that share
	// a scarce resource, such as a container engine); otherwise in
	// parallel.
	Serial bool
	// NewSite starts an installation running the old version.
	NewSite func(t *testing.T) Site
	// Engine builds an engine from a Site's Config, in the test process or
	// in a child updater process. restart is the updater's restart
	// request; mod, when set, adjusts the shared options after the
	// fixture's own.
	Engine func(cfg json.RawMessage, log *slog.Logger, restart func(string), mod func(*install.Options)) (*install.Engine, error)
	// BadOffers are the back-end's own bad offers, run after the suite's.
	BadOffers func(t *testing.T, s Site) []BadOffer
}

// Site is one installation under test, running the old version.
type Site interface {
	// Config is the site's description for Engine, with the updater's
	// state in stateDir.
	Config(stateDir string) json.RawMessage
	// Versions are what runs at first and what good offers bring.
	Versions() (old, new string)
	// Artifact is a package of version: broken passes the pre-activation
	// checks and fails the health gate.
	Artifact(t testing.TB, version string, broken bool) []byte
	// Server serves and signs artifacts.
	Server() *Server
	// Running waits (bounded) until what the back-end manages runs and
	// returns its identity (changes when it is replaced or restarted) and
	// its version.
	Running(t testing.TB) (id, version string)
	// Check verifies the back-end's own invariants once a transaction
	// ended: nothing half-made is left, and the new version runs when
	// isNew, the old one otherwise.
	Check(t testing.TB, stateDir string, isNew bool)
	// InstalledFile is the back-end's installed record under the state
	// dir, "" when it keeps none. It holds at least "version" and "hash".
	InstalledFile() string
}

// Quarantine is what a failed offer leaves in the quarantine.
type Quarantine int

const (
	// NotQuarantined: a refusal before anything was fetched, or a fault of
	// the host.
	NotQuarantined Quarantine = iota
	// Delayed: a transient fault; the same hash may be retried later.
	Delayed
	// Blocked: the artifact is bad; its hash is refused until another is offered.
	Blocked
)

// BadOffer is one offer that must be refused.
type BadOffer struct {
	Name string
	// Offer builds it (it may serve files on the site's server).
	Offer func(t testing.TB, s Site) *protobufs.PackagesAvailable
	// Options adjust the engine (nil: none).
	Options func(*install.Options)
	// Want must appear in the InstallFailed error message.
	Want string
	// Quarantine is what the refusal leaves.
	Quarantine Quarantine
}
