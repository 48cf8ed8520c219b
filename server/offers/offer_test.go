package offers

import (
	"bytes"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/server/estate"
)

// Instances sharing a store serve the estate's files from their own
// listeners: the same package gets the same hash from each (so any of them
// can deliver an offer another decided), and the download URL of the
// instance that sends it. Anything else in the offer changes the hash.
func TestOfferHashNamesThePackageNotTheInstance(t *testing.T) {
	pv := &estate.PackageVersion{Name: "otelcol-contrib", Version: "0.149.1", Artifacts: []estate.Artifact{
		{OS: "linux", Arch: "amd64", File: "artifacts/otelcol_0.149.1.tar.gz", SHA256: strings.Repeat("ab", 32), Signature: "sig"},
	}}
	at := func(base string) *Engine { return &Engine{opts: Options{BaseURL: func() string { return base }}} }
	a, ha, why := at("http://127.0.0.1:4320").buildOffer("linux", "amd64", pv, "binary")
	if a == nil {
		t.Fatal(why)
	}
	b, hb, _ := at("https://10.0.0.2:4320/").buildOffer("linux", "amd64", pv, "binary")
	if !bytes.Equal(ha, hb) || !bytes.Equal(a.AllPackagesHash, b.AllPackagesHash) {
		t.Fatalf("two instances hash one package differently: %x / %x", ha, hb)
	}
	urlA, urlB := a.Packages[pv.Name].File.DownloadUrl, b.Packages[pv.Name].File.DownloadUrl
	if urlA != "http://127.0.0.1:4320/artifacts/artifacts/otelcol_0.149.1.tar.gz" || urlB != "https://10.0.0.2:4320/artifacts/artifacts/otelcol_0.149.1.tar.gz" {
		t.Fatalf("download URLs %s, %s: each instance's own", urlA, urlB)
	}
	for _, change := range []func(*estate.PackageVersion){
		func(p *estate.PackageVersion) { p.Artifacts[0].File = "artifacts/other.tar.gz" },
		func(p *estate.PackageVersion) { p.Artifacts[0].URL = "https://mirror.example/otelcol.tar.gz" },
		func(p *estate.PackageVersion) { p.Artifacts[0].SHA256 = strings.Repeat("cd", 32) },
		func(p *estate.PackageVersion) { p.Artifacts[0].Signature = "other" },
		func(p *estate.PackageVersion) { p.Version = "0.149.2" },
	} {
		q := *pv
		q.Artifacts = append([]estate.Artifact(nil), pv.Artifacts...)
		change(&q)
		if _, h, _ := at("http://127.0.0.1:4320").buildOffer("linux", "amd64", &q, "binary"); bytes.Equal(h, ha) {
			t.Errorf("a changed package %+v keeps the hash", q)
		}
	}
}
