//go:build linux

package binary

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/install/installtest"
)

// TestConfirmRunning judges the collector the site installer left running
// with the health gate's signals.
func TestConfirmRunning(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, e *env) Options
		ok    bool
		want  []string // one of them in the refusal
	}{
		{"stayed up", func(t *testing.T, e *env) Options { return e.binaryOptions() }, true, nil},
		{"supervisor stopped", func(t *testing.T, e *env) Options {
			if err := e.ctl.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			return e.binaryOptions()
		}, false, []string{"the supervisor is not running"}},
		{"crash loop", func(t *testing.T, e *env) Options {
			e.replaceInitial(t, collectorBinary("0.148.0", "crash"))
			return e.binaryOptions()
		}, false, []string{"no collector process runs", "the collector restarted within the health window"}}, // between two starts, or restarting
		{"healthcheck answers 500", func(t *testing.T, e *env) Options {
			bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "unhealthy", 500) }))
			t.Cleanup(bad.Close)
			o := e.binaryOptions()
			o.HealthcheckURL = bad.URL
			return o
		}, false, []string{"supervisor healthcheck"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			b, err := New(tc.setup(t, e), e.ctl)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Provision(install.Env{Options: testOptions(e.state, ""), Log: installtest.TestLogger(t)}); err != nil {
				t.Fatal(err)
			}
			err = b.ConfirmRunning(context.Background())
			if tc.ok {
				if err != nil {
					t.Errorf("not confirmed: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrNotConfirmed) || !slices.ContainsFunc(tc.want, func(w string) bool { return strings.Contains(err.Error(), w) }) {
				t.Errorf("err %v, want ErrNotConfirmed saying one of %q", err, tc.want)
			}
		})
	}
}

// The version the site installer put there is confirmed before the first
// upgrade replaces it, so the host may go back to it without
// trust.allow_downgrade; to an older version it never ran it may not.
func TestGoBackToTheInstallersVersion(t *testing.T) {
	e := newEnv(t)
	eng, rec := e.engine(nil)
	offer(eng, rec, e.signedOffer("0.149.0", "/up", collectorBinary("0.149.0", "ok")))
	if st := rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.149.0" }); st.Status != stInstalled {
		t.Fatalf("upgrade: %v", st)
	}
	installtest.WaitIdle(t, eng)

	offer(eng, rec, e.signedOffer("0.147.0", "/older", collectorBinary("0.147.0", "ok")))
	st := rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.147.0" })
	if want := "downgrade from 0.149.0 to 0.147.0 refused (trust.allow_downgrade is false): this host may go back only to a version it confirmed healthy: 0.148.0, 0.149.0"; st.Status != stFailed || !strings.Contains(st.ErrorMessage, want) {
		t.Fatalf("a version never run: %v, want %q", st, want)
	}

	back := collectorBinary("0.148.0", "ok")
	offer(eng, rec, e.signedOffer("0.148.0", "/back", back))
	st = rec.Wait(t, pkg, 30*time.Second, func(s *protobufs.PackageStatus) bool { return terminal(s) && s.ServerOfferedVersion == "0.148.0" })
	if st.Status != stInstalled || st.AgentHasVersion != "0.148.0" {
		t.Fatalf("back to the installer's version: %v", st)
	}
	e.waitCollector(dirFor("0.148.0", back))
}

// binaryOptions are the back-end options of the env.
func (e *env) binaryOptions() Options {
	return Options{Package: pkg, Root: e.root, Executable: exeName, StorageDir: e.storage}
}

// replaceInitial puts exe in place of the initial version's executable and
// restarts the supervisor on it.
func (e *env) replaceInitial(t *testing.T, exe []byte) {
	t.Helper()
	if err := e.ctl.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.root, "versions", e.initialDir, exeName)
	if err := os.WriteFile(path+".new", exe, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if err := e.ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}
