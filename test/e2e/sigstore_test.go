package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/myriarch/myriarch/agent/verify/sigstoretest"
	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

// An upstream-style release signed only with Sigstore: imported into the
// catalog with `myriarchd catalog import`, offered with its bundle, and
// installed by a real updater (its helper beside it, offline) under the
// real Supervisor, whose policy names the release workflow.
func TestUpstreamReleaseVerifiedWithSigstore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(e.root, "trusted_root.json")
	if err := os.WriteFile(root, sigstoretest.Root(t, vs), 0o644); err != nil {
		t.Fatal(err)
	}
	// The release as downloaded: the archive and its bundle.
	c, _ := peers.Collector(peerbuild.VersionM2)
	rel := filepath.Join(e.root, "release")
	os.MkdirAll(rel, 0o755)
	name := site.PackageName + "_" + c.Version + "_linux_amd64.tar.gz"
	data, err := os.ReadFile(c.Archive)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(rel, name), data, 0o644)
	os.WriteFile(filepath.Join(rel, name+".sigstore.json"), sigstoretest.Bundle(t, vs, sigstoretest.Identity, sigstoretest.Issuer, data, time.Now()), 0o644)
	out, err := exec.Command(bins.Myriarchd, "catalog", "import", rel, "--estate", e.estate, "--package", site.PackageName, "--version", c.Version,
		"--executable", peerbuild.CollectorExecutable, "--identity-regexp", `^https://github\.com/open-telemetry/opentelemetry-collector-releases/.*@refs/tags/v.*$`,
		"--issuer", sigstoretest.Issuer, "--trusted-root", root, "--without-sct", "--force").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Sigstore bundle") {
		t.Fatalf("catalog import: %v\n%s", err, out)
	}
	pkg, _ := os.ReadFile(filepath.Join(e.estate, "packages", site.PackageName, c.Version+".yaml"))
	if !strings.Contains(string(pkg), "sigstoreBundle:") || strings.Contains(string(pkg), "signature:") {
		t.Fatalf("the catalog's package:\n%s", pkg)
	}

	e.sigstore = map[string]any{"identity_regexp": `^https://github\.com/open-telemetry/opentelemetry-collector-releases/.*@refs/tags/v.*$`,
		"issuer": sigstoretest.Issuer, "trusted_root_file": root, "require_sct": false}
	e.install(peerbuild.VersionM1)
	e.waitCollector("linked", 90*time.Second, func(a site.Agent) bool { return a.Pairing.State == "linked" })
	e.setTarget(c.Version)
	a := e.waitCollector("the Sigstore-signed version installed", 3*time.Minute, func(a site.Agent) bool {
		return a.Identifying["service.version"] == c.Version && a.OfferState() == "up_to_date"
	})
	if v, _ := e.site.CurrentVersion(); !strings.HasPrefix(v, c.Version+"-") {
		t.Fatalf("current %s, want %s (%+v)", v, c.Version, a.Offer)
	}
}
