package installtest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/agent/verify/sigstoretest"
)

// suiteSigstore is the suite's Sigstore (a CA and a log in memory, made
// once), another that the sites do not trust, and their trusted roots'
// files.
type suiteSigstore struct {
	vs, other       *ca.VirtualSigstore
	root, otherRoot string
}

var sigstores = sync.OnceValue(func() *suiteSigstore {
	s := &suiteSigstore{}
	dir, err := os.MkdirTemp("", "myriarch-sigstore-roots-")
	write := func(name string, fulcio, logs *ca.VirtualSigstore) string {
		data, err := sigstoretest.RootJSON(fulcio, logs)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		if err != nil {
			panic(err)
		}
		return filepath.Join(dir, name)
	}
	if err == nil {
		if s.vs, err = ca.NewVirtualSigstore(); err == nil {
			s.other, err = ca.NewVirtualSigstore()
		}
	}
	if err != nil {
		panic(err)
	}
	s.root, s.otherRoot = write("trusted_root.json", s.vs, s.vs), write("other_root.json", s.other, s.vs)
	return s
})

// trusting makes the engine trust root for the releases' identity, with
// the verifier helper built for the test (the test CA's certificates
// carry no SCT).
func trusting(t testing.TB, root string) func(o *install.Options) {
	helper := sigstoretest.Helper(t)
	return func(o *install.Options) {
		o.Sigstore = &verify.SigstorePolicy{Identity: sigstoretest.Identity, Issuer: sigstoretest.Issuer, TrustedRootFile: root, WithoutSCT: true, Helper: helper}
	}
}

// sigstoreBadOffers are the Sigstore bundles every back-end refuses: a
// good artifact, served, offered with a bundle that sign makes of it.
func sigstoreBadOffers(t testing.TB, f *Fixture) []BadOffer {
	s := sigstores()
	offer := func(path string, sign func(t testing.TB, data []byte) []byte) func(t testing.TB, site Site) *protobufs.PackagesAvailable {
		return func(t testing.TB, site Site) *protobufs.PackagesAvailable {
			_, v := site.Versions()
			data := site.Artifact(t, v, false)
			return Offer(f.Package, f.Type, v, site.Server().Serve(path, data), data, sign(t, data))
		}
	}
	by := func(identity, issuer string, at time.Duration) func(t testing.TB, data []byte) []byte {
		return func(t testing.TB, data []byte) []byte {
			return sigstoretest.Bundle(t, s.vs, identity, issuer, data, time.Now().Add(at))
		}
	}
	good := by(sigstoretest.Identity, sigstoretest.Issuer, 0)
	return []BadOffer{
		{Name: "sigstore: another identity", Want: "expected SAN value", Quarantine: Blocked, Options: trusting(t, s.root),
			Offer: offer("/sigstore-identity", by("https://github.com/someone/else/.github/workflows/x.yaml@refs/heads/main", sigstoretest.Issuer, 0))},
		{Name: "sigstore: another issuer", Want: "expected issuer value", Quarantine: Blocked, Options: trusting(t, s.root),
			Offer: offer("/sigstore-issuer", by(sigstoretest.Identity, "https://accounts.google.com", 0))},
		{Name: "sigstore: an expired certificate without a timestamp", Want: "integrated time outside certificate validity", Quarantine: Blocked,
			Options: trusting(t, s.root), Offer: offer("/sigstore-expired", by(sigstoretest.Identity, sigstoretest.Issuer, 30*time.Minute))},
		{Name: "sigstore: no log entry", Want: "transparency log", Quarantine: Blocked, Options: trusting(t, s.root),
			Offer: offer("/sigstore-no-tlog", func(t testing.TB, data []byte) []byte {
				e, err := s.vs.SignAtTime(sigstoretest.Identity, sigstoretest.Issuer, data, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				return sigstoretest.BundleOf(t, s.vs, e, false)
			})},
		{Name: "sigstore: a bundle of another artifact", Want: "artifact does not match digest", Quarantine: Blocked, Options: trusting(t, s.root),
			Offer: offer("/sigstore-other", func(t testing.TB, _ []byte) []byte { return good(t, []byte("another artifact")) })},
		{Name: "sigstore: a root that does not cover the certificate", Want: "leaf certificate verification failed", Quarantine: Blocked,
			Options: trusting(t, s.otherRoot), Offer: offer("/sigstore-root", good)},
		{Name: "sigstore: no policy on the host", Want: "trust.sigstore names no identity", Quarantine: Blocked,
			Offer: offer("/sigstore-no-policy", good)},
	}
}

// testSigstoreInstalls installs a version signed only with a Sigstore
// bundle, on a host that trusts its signer's identity.
func testSigstoreInstalls(t *testing.T, f *Fixture) {
	s := sigstores()
	testInstalls(t, f, "/sigstore-good", trusting(t, s.root), func(_ Site, data []byte) []byte {
		return sigstoretest.Bundle(t, s.vs, sigstoretest.Identity, sigstoretest.Issuer, data, time.Now())
	})
}

// testInstalls installs a version served at path and signed by sign, on a
// host set up by options: Installed, or, for a back-end whose install ends
// in a restart (the updater itself), the restart asked for once the new
// version is in place.
func testInstalls(t *testing.T, f *Fixture, path string, options func(*install.Options), sign func(site Site, data []byte) []byte) {
	site := f.NewSite(t)
	state := t.TempDir()
	restarted := make(chan struct{})
	var once sync.Once
	ctx, eng := startEngine(t, f, site, state, func(string) { once.Do(func() { close(restarted) }) }, options)
	_, v := site.Versions()
	data := site.Artifact(t, v, false)
	o := Offer(f.Package, f.Type, v, site.Server().Serve(path, data), data, sign(site, data))
	rec := newRecorder()
	eng.HandlePackages(ctx, o, rec.report)
	st := rec.Wait(t, f.Package, 2*time.Minute, func(st *protobufs.PackageStatus) bool {
		select {
		case <-restarted:
			return true
		default:
		}
		return st.ServerOfferedVersion == v && (st.Status == stInstalled || st.Status == stFailed)
	})
	select {
	case <-restarted:
		t.Logf("restart asked for, the new version in place (%v)", st.Status)
		return
	default:
	}
	if st.Status != stInstalled {
		t.Fatalf("%v %q, want Installed", st.Status, st.ErrorMessage)
	}
	waitIdle(t, eng)
	if _, now := site.Running(t); now != v {
		t.Fatalf("%s runs, want %s", now, v)
	}
	site.Check(t, state, true)
}
