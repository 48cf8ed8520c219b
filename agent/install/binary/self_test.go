//go:build linux

package binary

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
)

func selfOffer(e *env, version string, data []byte) *protobufs.PackagesAvailable {
	o := offer(SelfPackage, version, e.serve("/self-"+version, data), data, e.sign(data))
	o.Packages[SelfPackage].Type = protobufs.PackageType_PackageType_TopLevel
	return o
}

func TestSelfUpdate(t *testing.T) {
	e := newEnv(t)
	exe := filepath.Join(e.dir, "bin", SelfPackage)
	os.MkdirAll(filepath.Dir(exe), 0o755)
	oldBin := collectorBinary("0.1.0", "ok") // prints "… version 0.1.0"
	if err := os.WriteFile(exe, oldBin, 0o755); err != nil {
		t.Fatal(err)
	}
	newBin := collectorBinary("0.2.0", "ok")
	newSum := sha256.Sum256(newBin)
	// Every status about the offer, before and after the restart, names
	// it by its PackageAvailable.hash.
	wantOffered := offerHashOf("0.2.0", newSum[:])
	restarts := make(chan string, 4)
	engineAt := func(running string) (*Engine, *recorder, context.CancelFunc) {
		o := e.options()
		o.UpdaterVersion = running
		o.UpdaterExecutable = exe
		o.RequestRestart = func(reason string) { restarts <- reason }
		rec := newRecorder()
		eng, err := New(o, e.ctl, rec, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := eng.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		return eng, rec, func() { cancel(); eng.Close() }
	}
	apply := func() {
		t.Helper()
		eng, rec, stop := engineAt("0.1.0")
		defer stop()
		eng.Offer(context.Background(), selfOffer(e, "0.2.0", newBin))
		select {
		case r := <-restarts:
			if !strings.Contains(r, "0.2.0") {
				t.Fatalf("restart reason %q", r)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no restart requested")
		}
		if b, _ := os.ReadFile(exe); !bytes.Equal(b, newBin) {
			t.Fatal("executable not replaced")
		}
		if b, _ := os.ReadFile(filepath.Join(e.dir, "bin", "."+SelfPackage+".myriarch-old")); !bytes.Equal(b, oldBin) {
			t.Fatal("old binary not kept")
		}
		st := rec.wait(t, SelfPackage, 5*time.Second, func(s *protobufs.PackageStatus) bool {
			return s.Status == protobufs.PackageStatusEnum_PackageStatusEnum_Installing
		})
		if !bytes.Equal(st.ServerOfferedHash, wantOffered) {
			t.Fatalf("Installing status server_offered_hash %x, want %x", st.ServerOfferedHash, wantOffered)
		}
	}

	t.Run("confirmed at next start", func(t *testing.T) {
		apply()
		_, rec, stop := engineAt("0.2.0")
		defer stop()
		st := rec.wait(t, SelfPackage, 5*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) })
		if st.Status != stInstalled || st.AgentHasVersion != "0.2.0" || !bytes.Equal(st.ServerOfferedHash, wantOffered) ||
			!bytes.Equal(st.AgentHasHash, newSum[:]) {
			t.Fatalf("status %v", st)
		}
		if len(restarts) != 0 {
			t.Fatal("restart requested after a confirmed update")
		}
	})
	t.Run("rolled back when the new binary does not report the offered version", func(t *testing.T) {
		os.WriteFile(exe, oldBin, 0o755)
		os.Remove(filepath.Join(e.state, quarantineFile))
		apply()
		_, rec, stop := engineAt("0.1.0")
		defer stop()
		st := rec.wait(t, SelfPackage, 5*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) })
		if st.Status != stFailed || !strings.Contains(st.ErrorMessage, "rolled back") || !bytes.Equal(st.ServerOfferedHash, wantOffered) {
			t.Fatalf("status %v", st)
		}
		if b, _ := os.ReadFile(exe); !bytes.Equal(b, oldBin) {
			t.Fatal("old binary not restored")
		}
		select {
		case <-restarts:
		case <-time.After(5 * time.Second):
			t.Fatal("no restart requested to run the restored binary")
		}
	})
	t.Run("bad self offers leave the binary alone", func(t *testing.T) {
		os.WriteFile(exe, oldBin, 0o755)
		os.Remove(filepath.Join(e.state, quarantineFile))
		eng, rec, stop := engineAt("0.1.0")
		defer stop()
		for _, c := range []struct {
			offer *protobufs.PackagesAvailable
			want  string
		}{
			{selfOffer(e, "0.0.9", collectorBinary("0.0.9", "ok")), "downgrade"},
			{func() *protobufs.PackagesAvailable {
				o := selfOffer(e, "0.3.0", collectorBinary("0.3.0", "ok"))
				o.Packages[SelfPackage].File.Signature = newKeyEnv().sign([]byte("x"))
				return o
			}(), "signature key is not trusted"},
			{selfOffer(e, "0.4.0", collectorBinary("0.5.0", "ok")), `reports version "0.5.0"`},
		} {
			eng.Offer(context.Background(), c.offer)
			st := rec.wait(t, SelfPackage, 30*time.Second, func(s *protobufs.PackageStatus) bool {
				return s.Status == stFailed && s.ServerOfferedVersion == c.offer.Packages[SelfPackage].Version
			})
			if !strings.Contains(st.ErrorMessage, c.want) {
				t.Fatalf("error %q, want %q", st.ErrorMessage, c.want)
			}
		}
		if b, _ := os.ReadFile(exe); !bytes.Equal(b, oldBin) || len(restarts) != 0 {
			t.Fatal("a refused self offer touched the binary or asked for a restart")
		}
	})
}

// TestSelfOfferOfRunningVersion: the server keeps offering the updater
// version that runs; that is Installed, never a re-download.
func TestSelfOfferOfRunningVersion(t *testing.T) {
	e := newEnv(t)
	exe := filepath.Join(e.dir, SelfPackage)
	os.WriteFile(exe, collectorBinary("0.2.0", "ok"), 0o755)
	eng, rec := e.engine(func(o *Options) {
		o.UpdaterVersion, o.UpdaterExecutable = "0.2.0", exe
		o.RequestRestart = func(string) { t.Error("restart requested") }
	})
	o := selfOffer(e, "0.2.0", collectorBinary("0.2.0", "ok"))
	eng.Offer(context.Background(), o)
	st := rec.wait(t, SelfPackage, 5*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) })
	if st.Status != stInstalled || st.AgentHasVersion != "0.2.0" || e.hitCount("/self-0.2.0") != 0 || eng.Busy() {
		t.Fatalf("status %v, downloads %d", st, e.hitCount("/self-0.2.0"))
	}
}
