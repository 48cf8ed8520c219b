package selfupdate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/installtest"
)

var (
	stInstalled  = protobufs.PackageStatusEnum_PackageStatusEnum_Installed
	stInstalling = protobufs.PackageStatusEnum_PackageStatusEnum_Installing
	stFailed     = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
)

// startEngine starts an updater's engine on the site, as the process
// running the site's binary; restarts receive its restart requests.
func startEngine(t *testing.T, s *site, state string, restarts chan string) *install.Engine {
	t.Helper()
	eng, err := engineFor(s.Config(state), installtest.TestLogger(t), func(r string) { restarts <- r }, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); eng.Close() })
	if err := eng.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	return eng
}

func selfStatus(t *testing.T, eng *install.Engine) *protobufs.PackageStatus {
	t.Helper()
	st, err := eng.LastStatuses()
	if err != nil {
		t.Fatal(err)
	}
	return st.GetPackages()[install.SelfPackage]
}

// A whole self-update: the new binary replaces the executable and a restart
// is requested; the restarted updater confirms it (Installed, naming the
// offer by its hash), or restores the old binary and restarts again when
// it does not report the offered version.
func TestSelfUpdate(t *testing.T) {
	installtest.NeedStandIns(t)
	for _, tc := range []struct {
		name           string
		broken, helper bool
	}{
		{"confirmed at the next start", false, false},
		{"rolled back when the new binary reports another version", true, false},
		{"with its Sigstore verifier, confirmed", false, true},
		{"with its Sigstore verifier, rolled back", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t)
			state := t.TempDir()
			oldBin, _ := os.ReadFile(s.exe)
			newBin := s.Artifact(t, "0.2.0", tc.broken)
			pkg := newBin
			helper := filepath.Join(filepath.Dir(s.exe), helperName())
			oldHelper, newHelper := installtest.Binary("0.1.0", "ok"), installtest.Binary("0.2.0", "ok")
			if tc.helper {
				os.WriteFile(helper, oldHelper, 0o755)
				pkg = tarGzOf(t, map[string][]byte{exeName(): newBin, helperName(): newHelper})
			}
			sum := sha256.Sum256(pkg)
			o := installtest.Offer(install.SelfPackage, protobufs.PackageType_PackageType_TopLevel, "0.2.0", s.srv.Serve("/self", pkg), pkg, s.srv.Sign(pkg))
			wantOffered := o.Packages[install.SelfPackage].Hash

			restarts := make(chan string, 4)
			eng := startEngine(t, s, state, restarts)
			rec := installtest.NewRecorder()
			eng.HandlePackages(context.Background(), o, rec.Report)
			select {
			case r := <-restarts:
				if !strings.Contains(r, "0.2.0") {
					t.Fatalf("restart reason %q", r)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no restart requested")
			}
			installtest.WaitIdle(t, eng)
			if b, _ := os.ReadFile(s.exe); !bytes.Equal(b, newBin) {
				t.Fatal("executable not replaced")
			}
			if b, _ := os.ReadFile(helper); tc.helper && !bytes.Equal(b, newHelper) {
				t.Fatal("the Sigstore verifier not replaced")
			}
			if b, _ := os.ReadFile(filepath.Join(filepath.Dir(s.exe), "."+exeName()+".myriarch-old")); !bytes.Equal(b, oldBin) {
				t.Fatal("old binary not kept")
			}
			if st := selfStatus(t, eng); st.GetStatus() != stInstalling || !bytes.Equal(st.ServerOfferedHash, wantOffered) {
				t.Fatalf("status before the restart %v, want Installing naming the offer hash", st)
			}
			eng.Close()

			// The service manager starts the binary now in place; it is
			// judged while it runs.
			eng = startEngine(t, s, state, restarts)
			installtest.WaitIdle(t, eng)
			st := selfStatus(t, eng)
			if !tc.broken {
				if st.GetStatus() != stInstalled || st.AgentHasVersion != "0.2.0" || !bytes.Equal(st.ServerOfferedHash, wantOffered) ||
					!bytes.Equal(st.AgentHasHash, sum[:]) {
					t.Fatalf("status %v", st)
				}
				if len(restarts) != 0 {
					t.Fatal("restart requested after a confirmed update")
				}
				if b, _ := os.ReadFile(helper); tc.helper && !bytes.Equal(b, newHelper) {
					t.Fatal("the new Sigstore verifier is gone after the update was confirmed")
				}
				return
			}
			if st.GetStatus() != stFailed || !strings.Contains(st.ErrorMessage, "rolled back to 0.1.0") || !bytes.Equal(st.ServerOfferedHash, wantOffered) {
				t.Fatalf("status %v", st)
			}
			if b, _ := os.ReadFile(s.exe); !bytes.Equal(b, oldBin) {
				t.Fatal("old binary not restored")
			}
			if b, _ := os.ReadFile(helper); tc.helper && !bytes.Equal(b, oldHelper) {
				t.Fatal("the old Sigstore verifier not restored")
			}
			select {
			case <-restarts:
			default:
				t.Fatal("no restart requested to run the restored binary")
			}
		})
	}
}

// The server keeps offering the updater version that runs; that is
// Installed at once, never a download.
func TestOfferOfTheRunningVersion(t *testing.T) {
	installtest.NeedStandIns(t)
	s := newSite(t)
	eng := startEngine(t, s, t.TempDir(), make(chan string, 1))
	data := installtest.Binary("0.1.0", "ok")
	o := installtest.Offer(install.SelfPackage, protobufs.PackageType_PackageType_TopLevel, "0.1.0", s.srv.Serve("/same", data), data, s.srv.Sign(data))
	rec := installtest.NewRecorder()
	eng.HandlePackages(context.Background(), o, rec.Report)
	st := rec.Wait(t, install.SelfPackage, 5*time.Second, func(*protobufs.PackageStatus) bool { return true })
	if st.Status != stInstalled || st.AgentHasVersion != "0.1.0" || s.srv.Hits("/same") != 0 || eng.Busy() {
		t.Fatalf("status %v, downloads %d", st, s.srv.Hits("/same"))
	}
}

// An updater that kept no journal for a self-update left only the pending
// marker: the updater it started adopts the update, confirms it when it
// runs the offered version and restores the old binary otherwise.
func TestAdoptsAMarkerWithoutJournal(t *testing.T) {
	installtest.NeedStandIns(t)
	for _, tc := range []struct {
		name   string
		mode   string
		status protobufs.PackageStatusEnum
	}{{"confirmed", "ok", stInstalled}, {"rolled back", "lies", stFailed}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t)
			state := t.TempDir()
			oldBin, _ := os.ReadFile(s.exe)
			newBin := installtest.Binary("0.2.0", tc.mode)
			staged := filepath.Join(t.TempDir(), exeName())
			if err := os.WriteFile(staged, newBin, 0o755); err != nil {
				t.Fatal(err)
			}
			u, err := New(s.exe, state)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(newBin)
			if err := u.Apply(staged, "", "0.1.0", "0.2.0", hexOf(sum[:]), ""); err != nil {
				t.Fatal(err)
			}
			restarts := make(chan string, 2)
			eng := startEngine(t, s, state, restarts)
			installtest.WaitIdle(t, eng)
			st := selfStatus(t, eng)
			if st.GetStatus() != tc.status || st.ServerOfferedVersion != "0.2.0" || !bytes.Equal(st.ServerOfferedHash, sum[:]) {
				t.Fatalf("status %v, want %v for 0.2.0 naming the content hash", st, tc.status)
			}
			if p, _ := u.Pending(); p != nil {
				t.Error("the marker is still pending")
			}
			b, _ := os.ReadFile(s.exe)
			if tc.status == stFailed && (!bytes.Equal(b, oldBin) || len(restarts) != 1) {
				t.Error("the old binary was not restored and restarted")
			}
			if tc.status == stInstalled && (!bytes.Equal(b, newBin) || len(restarts) != 0) {
				t.Error("the confirmed binary did not stay")
			}
		})
	}
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
