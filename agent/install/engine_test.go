package install

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
	"go.uber.org/goleak"

	"github.com/myriarch/myriarch/agent/pkgstatus"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBackend installs nothing: it reports what it is told runs.
type fakeBackend struct {
	desc    Description
	running Installed
}

func (f *fakeBackend) Describe() Description                         { return f.desc }
func (f *fakeBackend) Running(context.Context) (Installed, error)    { return f.running, nil }
func (f *fakeBackend) Stage(context.Context, *Txn) error             { return nil }
func (f *fakeBackend) Activate(context.Context, *Txn) error          { return nil }
func (f *fakeBackend) Gate(context.Context, *Txn) error              { return nil }
func (f *fakeBackend) Commit(context.Context, *Txn) error            { return nil }
func (f *fakeBackend) Rollback(context.Context, *Txn) error          { return nil }
func (f *fakeBackend) Abandon(context.Context, *Txn) error           { return nil }
func (f *fakeBackend) Recover(context.Context, *Txn) (Resume, error) { return Abandon, nil }

func collectorBackend(running Installed) *fakeBackend {
	return &fakeBackend{desc: Description{Package: "collector", Type: protobufs.PackageType_PackageType_Addon, Kind: "fake"}, running: running}
}

var testHash = bytes.Repeat([]byte{0xab}, 32)

func pkgOffer(typ protobufs.PackageType, version string, hash, sig []byte) *protobufs.PackageAvailable {
	return &protobufs.PackageAvailable{Type: typ, Version: version, Hash: []byte("offer"),
		File: &protobufs.DownloadableFile{DownloadUrl: "http://127.0.0.1:1/a", ContentHash: hash, Signature: sig}}
}

func newTestEngine(t *testing.T, o Options, backends ...Backend) *Engine {
	t.Helper()
	if o.StateDir == "" {
		o.StateDir = t.TempDir()
	}
	e, err := New(o, nil, backends...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestOptionsValidate(t *testing.T) {
	err := Options{StateDir: "rel", HealthWindow: -1, MaxPackageSize: -1, RequireSignature: true, PollInterval: -1}.Validate()
	for _, want := range []string{"state_dir: must be an absolute path", "collector.health_window", "collector.max_package_size",
		"trust.minisign_public_keys", "poll interval"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if _, err := New(Options{StateDir: t.TempDir()}, nil); err == nil {
		t.Error("an engine without back-end was built")
	}
	a, b := collectorBackend(Installed{}), collectorBackend(Installed{})
	if _, err := New(Options{StateDir: t.TempDir()}, nil, a, b); err == nil || !strings.Contains(err.Error(), "two back-ends") {
		t.Errorf("two back-ends for one package: %v", err)
	}
}

// Offers before Recover and after Close are refused with the reason; a
// second Recover is refused.
func TestOfferBeforeRecoverAndAfterClose(t *testing.T) {
	e := newTestEngine(t, Options{}, collectorBackend(Installed{Version: "1.0.0"}))
	var got []string
	rep := func(s *protobufs.PackageStatuses) error {
		got = append(got, s.GetPackages()["collector"].GetErrorMessage())
		return nil
	}
	o := &protobufs.PackagesAvailable{Packages: map[string]*protobufs.PackageAvailable{"collector": pkgOffer(protobufs.PackageType_PackageType_Addon, "1.1.0", testHash, nil)}}
	e.HandlePackages(context.Background(), o, rep)
	if len(got) == 0 || !strings.Contains(got[len(got)-1], "Recover was not called") {
		t.Fatalf("offer before Recover: %q", got)
	}
	if err := e.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Recover(context.Background()); err == nil {
		t.Fatal("second Recover accepted")
	}
	e.Close()
	e.HandlePackages(context.Background(), o, rep)
	if !strings.Contains(got[len(got)-1], "closed") {
		t.Fatalf("offer after Close: %q", got)
	}
}

// Admission needs no download: every refusal with its message.
func TestAdmission(t *testing.T) {
	addon, top := protobufs.PackageType_PackageType_Addon, protobufs.PackageType_PackageType_TopLevel
	e := newTestEngine(t, Options{RequireSignature: true, MinisignPublicKeys: []string{"RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"},
		NoSelfUpdate: "the updater is replaced with its own image"}, collectorBackend(Installed{Version: "1.2.0"}))
	if err := e.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    *protobufs.PackageAvailable
		want string
	}{
		{"collector", pkgOffer(addon, "1.3.0", testHash, []byte("sig")), ""},
		{"other", pkgOffer(addon, "1.3.0", testHash, []byte("sig")), `unknown package "other": this updater installs only "collector" (an Addon)`},
		{"collector", pkgOffer(top, "1.3.0", testHash, []byte("sig")), "must be an Addon"},
		{SelfPackage, pkgOffer(top, "1.3.0", testHash, []byte("sig")), "self-update is not enabled on this updater: the updater is replaced with its own image"},
		{"collector", pkgOffer(addon, "1.3.0", []byte{1, 2}, []byte("sig")), "32-byte"},
		{"collector", pkgOffer(addon, "one", testHash, []byte("sig")), "unparsable version"},
		{"collector", pkgOffer(addon, "1.3.0", testHash, nil), "unsigned"},
		{"collector", pkgOffer(addon, "1.1.0", testHash, []byte("sig")), "downgrade from 1.2.0 to 1.1.0"},
	} {
		e.mu.Lock()
		_, err := e.admitLocked(tc.name, tc.p)
		e.mu.Unlock()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrRefused)) {
			t.Errorf("%s %s: err %v, want %q", tc.name, tc.p.GetVersion(), err, tc.want)
		}
	}
}

// A status left in progress by a restart is settled against what runs, by
// the offer hash or (statuses persisted by older updaters) the content
// hash; what runs gets an Installed status when nothing else is about it.
func TestSettleStatuses(t *testing.T) {
	offer, content := bytes.Repeat([]byte{0x0f}, 32), testHash
	running := Installed{Version: "1.3.0", Hash: hexOf(content), OfferHash: hexOf(offer)}
	for _, tc := range []struct {
		name      string
		running   Installed
		persisted *protobufs.PackageStatus
		want      protobufs.PackageStatusEnum
		wantHash  []byte
	}{
		{"by offer hash", running, &protobufs.PackageStatus{ServerOfferedVersion: "1.3.0", ServerOfferedHash: offer,
			Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installing}, protobufs.PackageStatusEnum_PackageStatusEnum_Installed, offer},
		{"old status, content hash", running, &protobufs.PackageStatus{ServerOfferedVersion: "1.3.0", ServerOfferedHash: content,
			Status: protobufs.PackageStatusEnum_PackageStatusEnum_Downloading}, protobufs.PackageStatusEnum_PackageStatusEnum_Installed, content},
		{"old installed record", Installed{Version: "1.3.0", Hash: hexOf(content)}, &protobufs.PackageStatus{ServerOfferedVersion: "1.3.0",
			ServerOfferedHash: content, Status: protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending}, protobufs.PackageStatusEnum_PackageStatusEnum_Installed, content},
		{"another offer", Installed{Version: "1.2.0", Hash: strings.Repeat("cd", 32)}, &protobufs.PackageStatus{ServerOfferedVersion: "1.3.0",
			ServerOfferedHash: offer, Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installing}, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, offer},
		{"a failure stays", running, &protobufs.PackageStatus{ServerOfferedVersion: "1.4.0", ServerOfferedHash: offer, ErrorMessage: "bad",
			Status: protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed}, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, offer},
		{"nothing persisted", running, nil, protobufs.PackageStatusEnum_PackageStatusEnum_Installed, offer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			if tc.persisted != nil {
				tc.persisted.Name = "collector"
				if err := pkgstatus.Save(filepath.Join(state, StatusesFile), &protobufs.PackageStatuses{
					Packages: map[string]*protobufs.PackageStatus{"collector": tc.persisted}}); err != nil {
					t.Fatal(err)
				}
			}
			e := newTestEngine(t, Options{StateDir: state}, collectorBackend(tc.running))
			if err := e.Recover(context.Background()); err != nil {
				t.Fatal(err)
			}
			last, err := e.LastStatuses()
			if err != nil {
				t.Fatal(err)
			}
			st := last.GetPackages()["collector"]
			if st.GetStatus() != tc.want || !bytes.Equal(st.GetServerOfferedHash(), tc.wantHash) {
				t.Errorf("settled %v, want %v naming %x", st, tc.want, tc.wantHash)
			}
			if tc.persisted.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed && st.GetAgentHasVersion() != tc.running.Version {
				t.Errorf("agent_has_version %q, want %q", st.GetAgentHasVersion(), tc.running.Version)
			}
		})
	}
}

// A journal written in another mode is dropped, not replayed, and does not
// block installs.
func TestJournalOfAnotherMode(t *testing.T) {
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, JournalFile), []byte(`{"id":"x","kind":"container","step":"next-started"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Options{StateDir: state}, collectorBackend(Installed{Version: "1.0.0"}))
	if err := e.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, JournalFile)); !os.IsNotExist(err) {
		t.Fatalf("journal of another mode kept: %v", err)
	}
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
