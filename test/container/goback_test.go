package container_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testenv"
)

// Container mode follows binary mode's rule: the image the collector
// container ran before the first swap is confirmed healthy before it is
// replaced, so the host may go back to it without trust.allow_downgrade;
// an older image it never ran is refused, naming the confirmed versions,
// without a download.
func TestGoBackToAConfirmedImage(t *testing.T) {
	t.Parallel()
	cli := testenv.Docker(t)
	ctx := context.Background()
	k := newKeys(t)
	repo := randName("myriarch-ct-img-")
	first := imageSpec{version: "0.1.0", healthcheck: true}
	loadImage(t, cli, fakeImage(t, first), repo+":0.1.0")
	c := startCollector(t, cli, repo+":0.1.0", true)

	dir := t.TempDir()
	up, upSig := publishTarball(t, k, fakeImage(t, imageSpec{version: "0.2.0", healthcheck: true}), repo+":0.2.0", dir, "c-0.2.0.tar")
	t.Cleanup(func() { removeImage(cli, repo+":0.2.0") })
	back, backSig := publishTarball(t, k, fakeImage(t, first), repo+":0.1.0", dir, "c-0.1.0.tar")
	older, olderSig := publishTarball(t, k, fakeImage(t, imageSpec{version: "0.0.5", healthcheck: true}), repo+":0.0.5", dir, "c-0.0.5.tar")
	srv, hits := tarballServer(t, dir)

	eng := newEngine(t, engineOptions(c, t.TempDir(), k))
	if err := eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	eng.HandlePackages(ctx, offer("0.2.0", srv.URL+"/c-0.2.0.tar", up, upSig, nil), rec.report)
	if st := rec.wait(t, "0.2.0", 2*time.Minute); st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
		t.Fatalf("upgrade: %s %q", st.GetStatus(), st.GetErrorMessage())
	}
	assertOneRunning(t, cli, c, "0.2.0")

	n := hits.Load()
	eng.HandlePackages(ctx, offer("0.0.5", srv.URL+"/c-0.0.5.tar", older, olderSig, nil), rec.report)
	st := rec.wait(t, "0.0.5", 10*time.Second)
	want := "downgrade from 0.2.0 to 0.0.5 refused (trust.allow_downgrade is false): this host may go back only to a version it confirmed healthy: 0.1.0, 0.2.0"
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), want) {
		t.Fatalf("an image never run: %s %q, want %q", st.GetStatus(), st.GetErrorMessage(), want)
	}
	if hits.Load() != n {
		t.Error("a refused downgrade was downloaded")
	}

	eng.HandlePackages(ctx, offer("0.1.0", srv.URL+"/c-0.1.0.tar", back, backSig, nil), rec.report)
	if st := rec.wait(t, "0.1.0", 2*time.Minute); st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed || st.GetAgentHasVersion() != "0.1.0" {
		t.Fatalf("back to the first image: %s %q", st.GetStatus(), st.GetErrorMessage())
	}
	assertOneRunning(t, cli, c, "0.1.0")
}
