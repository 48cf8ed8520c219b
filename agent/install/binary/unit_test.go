package binary

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
)

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		out, want string
		ok        bool
	}{
		{"otelcol-contrib version 0.149.0-m.2\n", "0.149.0-m.2", true},
		{"otelcol-contrib version v0.149.0", "0.149.0", true},
		{"myriarch-updater 1.2.3", "1.2.3", true},
		{"otelcol-contrib version 0.149.0", "0.150.0", false},
		{"otelcol-contrib version 0.149.0-rc.1", "0.149.0", false},
		{"", "0.149.0", false},
	} {
		err := checkVersion(tc.out, tc.want)
		if (err == nil) != tc.ok {
			t.Errorf("checkVersion(%q, %q) = %v", tc.out, tc.want, err)
		}
		if err != nil && !errors.Is(err, ErrVersionCheck) {
			t.Errorf("error %v does not wrap ErrVersionCheck", err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{Package: SelfPackage, Root: "rel", Executable: "a/b", RequireSignature: true,
		HealthcheckURL: "http://10.0.0.1:13133/"}.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"collector.package", "collector.root: must be an absolute path", "state_dir: required",
		"supervisor.storage_dir: required", "collector.executable", "trust.minisign_public_keys", "must be loopback"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

func TestPhaseCoversEverySavedStep(t *testing.T) {
	// Crash-only points (never written to the journal) need no phase.
	crashOnly := map[string]bool{cpDownloading: true, cpLinkStaged: true, cpSwitched: true, cpInstalledRecorded: true,
		cpGarbageCollected: true, cpCommitted: true, cpRollbackLinkStage: true, cpRecoverBegin: true}
	for _, p := range CrashPoints {
		if !crashOnly[p] && phase(p) == "unknown" {
			t.Errorf("journal step %q has no recovery phase", p)
		}
	}
}

func TestOfferBeforeRecoverAndAfterClose(t *testing.T) {
	dir := t.TempDir()
	var got []string
	rep := ReporterFunc(func(s *protobufs.PackageStatuses) error {
		for _, p := range s.GetPackages() {
			got = append(got, p.GetErrorMessage())
		}
		return nil
	})
	eng, err := New(Options{Package: "otelcol", Root: dir + "/root", Executable: "otelcol", StateDir: dir + "/state",
		StorageDir: dir + "/storage"}, stoppedController{}, rep, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := &protobufs.PackagesAvailable{Packages: map[string]*protobufs.PackageAvailable{"otelcol": {
		Type: protobufs.PackageType_PackageType_Addon, Version: "1.0.0"}}}
	eng.Offer(context.Background(), o)
	if len(got) == 0 || !strings.Contains(got[len(got)-1], "not running") {
		t.Fatalf("offer before Recover: %q", got)
	}
	if err := eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := eng.Recover(context.Background()); err == nil {
		t.Fatal("second Recover accepted")
	}
	eng.Close()
	eng.Offer(context.Background(), o)
	if !strings.Contains(got[len(got)-1], "not running") {
		t.Fatalf("offer after Close: %q", got)
	}
}

type stoppedController struct{}

func (stoppedController) Stop(context.Context) error  { return nil }
func (stoppedController) Start(context.Context) error { return nil }
func (stoppedController) PID() int                    { return 0 }
