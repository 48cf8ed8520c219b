//go:build linux || windows

package binary

import (
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install/installtest"
)

// TestContract runs the install contract suite against the binary
// back-end: a real updater process SIGKILLed at every crash point, every
// bad offer refused with the running collector untouched.
func TestContract(t *testing.T) { installtest.Run(t, fixture) }

// binaryBadOffers are the bad artifacts only a binary install meets:
// archives that climb out, lack the executable or link it elsewhere, and
// executables that fail their --version check.
func binaryBadOffers(t *testing.T, s installtest.Site) []installtest.BadOffer {
	e := s.(*env)
	_, v := e.Versions()
	good := collectorBinary(v, "ok")
	art := func(name string, data func() []byte) func(testing.TB, installtest.Site) *protobufs.PackagesAvailable {
		return func(testing.TB, installtest.Site) *protobufs.PackagesAvailable {
			return e.signedOffer(v, "/"+name, data())
		}
	}
	return []installtest.BadOffer{
		{Name: "archive with ../", Want: "climbs out with ..", Quarantine: installtest.Blocked,
			Offer: art("escape", func() []byte { return tarGzOf(t, map[string][]byte{exeName: good, "../escape": []byte("x")}, nil) })},
		{Name: "archive with an absolute path", Want: "absolute path", Quarantine: installtest.Blocked,
			Offer: art("absolute", func() []byte { return tarGzOf(t, map[string][]byte{exeName: good, "/etc/evil": []byte("x")}, nil) })},
		{Name: "archive with a symlink", Want: "links are not allowed", Quarantine: installtest.Blocked,
			Offer: art("symlink", func() []byte {
				return tarGzOf(t, map[string][]byte{"README": []byte("x")}, map[string]string{exeName: "/bin/sh"})
			})},
		{Name: "missing executable", Want: "executable not found", Quarantine: installtest.Blocked,
			Offer: art("missing", func() []byte { return tarGzOf(t, map[string][]byte{"otelcol": good}, nil) })},
		{Name: "executable exits 1", Want: "exit status 1", Quarantine: installtest.Blocked,
			Offer: art("exit1", func() []byte { return collectorBinary(v, "exit1") })},
		{Name: "executable prints another version", Want: `reports version "0.151.0", the offer says "` + v + `"`, Quarantine: installtest.Blocked,
			Offer: art("other-version", func() []byte { return collectorBinary("0.151.0", "ok") })},
		{Name: "self-update not enabled", Want: "self-update is not enabled",
			Offer: func(testing.TB, installtest.Site) *protobufs.PackagesAvailable {
				return installtest.Offer("myriarch-updater", protobufs.PackageType_PackageType_TopLevel, "9.0.0", e.srv.Serve("/self", good), good, e.srv.Sign(good))
			}},
	}
}
