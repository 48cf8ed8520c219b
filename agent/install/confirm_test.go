package install

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/confirmed"
)

// confirmingBackend is a fakeBackend that can judge what runs.
type confirmingBackend struct {
	*fakeBackend
	confirm error
	asked   int
}

func (c *confirmingBackend) ConfirmRunning(context.Context) error { c.asked++; return c.confirm }

// artifacts serves one artifact per version, for offers the engine downloads.
type artifacts struct {
	srv *httptest.Server
}

func newArtifacts(t *testing.T) *artifacts {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(artifactOf(strings.TrimPrefix(r.URL.Path, "/")))
	}))
	t.Cleanup(srv.Close)
	return &artifacts{srv: srv}
}

func artifactOf(version string) []byte { return []byte("collector " + version) }

// offer offers the collector at version, unsigned.
func (a *artifacts) offer(version string) *protobufs.PackagesAvailable {
	sum := sha256.Sum256(artifactOf(version))
	return &protobufs.PackagesAvailable{Packages: map[string]*protobufs.PackageAvailable{"collector": {
		Type: protobufs.PackageType_PackageType_Addon, Version: version, Hash: []byte("offer " + version),
		File: &protobufs.DownloadableFile{DownloadUrl: a.srv.URL + "/" + version, ContentHash: sum[:]}}}}
}

// statuses keeps the last status of the collector.
type statuses struct {
	mu   sync.Mutex
	last *protobufs.PackageStatus
}

func (s *statuses) report(p *protobufs.PackageStatuses) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = p.GetPackages()["collector"]
	return nil
}

// install offers version and waits for the engine to end with it.
func (s *statuses) install(t *testing.T, e *Engine, a *artifacts, version string) *protobufs.PackageStatus {
	t.Helper()
	e.HandlePackages(context.Background(), a.offer(version), s.report)
	deadline := time.Now().Add(time.Minute)
	for {
		s.mu.Lock()
		st := s.last
		s.mu.Unlock()
		if !e.Busy() && st.GetServerOfferedVersion() == version && st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the offer of %s did not end: %v", version, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A version that passed the health gate is recorded; after a restart the
// host may go back to it without trust.allow_downgrade, and to no other
// older version; the refusal names what it confirmed.
func TestGoingBackToConfirmedVersions(t *testing.T) {
	state, a := t.TempDir(), newArtifacts(t)
	e := newTestEngine(t, Options{StateDir: state}, collectorBackend(Installed{Version: "1.2.0"}))
	if err := e.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	var s statuses
	for _, v := range []string{"1.3.0", "1.4.0"} {
		if st := s.install(t, e, a, v); st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
			t.Fatalf("install %s: %v", v, st)
		}
	}
	e.Close()
	if got := confirmed.New(filepath.Join(state, confirmed.File), nil).Versions("collector"); !reflect.DeepEqual(got, []string{"1.3.0", "1.4.0"}) {
		t.Fatalf("confirmed %v, want the two versions that passed the gate", got)
	}

	// The updater restarts with 1.4.0 running.
	e = newTestEngine(t, Options{StateDir: state}, collectorBackend(Installed{Version: "1.4.0", Hash: "x"}))
	if err := e.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := s.install(t, e, a, "1.2.0")
	want := "downgrade from 1.4.0 to 1.2.0 refused (trust.allow_downgrade is false): this host may go back only to a version it confirmed healthy: 1.3.0, 1.4.0"
	if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || !strings.Contains(st.GetErrorMessage(), want) {
		t.Fatalf("a version never confirmed: %v, want InstallFailed saying %q", st, want)
	}
	if st := s.install(t, e, a, "1.3.0"); st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed || st.GetAgentHasVersion() != "1.3.0" {
		t.Fatalf("back to a confirmed version: %v", st)
	}
}

// The version found running (installed by something else than the
// updater) is recorded when the back-end confirms it before it is
// replaced, and only then; the install goes on either way.
func TestRunningVersionConfirmedBeforeItIsReplaced(t *testing.T) {
	for _, tc := range []struct {
		name    string
		confirm error
		known   []string // recorded before
		want    []string
		asked   int
	}{
		{"confirmed", nil, nil, []string{"1.2.0", "1.3.0"}, 1},
		{"not confirmed", errors.New("the collector restarted"), nil, []string{"1.3.0"}, 1},
		{"already recorded", nil, []string{"1.2.0"}, []string{"1.2.0", "1.3.0"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, a := t.TempDir(), newArtifacts(t)
			store := confirmed.New(filepath.Join(state, confirmed.File), nil)
			for _, v := range tc.known {
				if err := store.Record("collector", v, ""); err != nil {
					t.Fatal(err)
				}
			}
			b := &confirmingBackend{fakeBackend: collectorBackend(Installed{Version: "1.2.0"}), confirm: tc.confirm}
			e := newTestEngine(t, Options{StateDir: state}, b)
			if err := e.Recover(context.Background()); err != nil {
				t.Fatal(err)
			}
			var s statuses
			if st := s.install(t, e, a, "1.3.0"); st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
				t.Fatalf("install: %v", st)
			}
			e.Close()
			if got := store.Versions("collector"); !reflect.DeepEqual(got, tc.want) || b.asked != tc.asked {
				t.Errorf("confirmed %v after %d judgement(s), want %v after %d", got, b.asked, tc.want, tc.asked)
			}
		})
	}
}

// Container mode keeps its record apart (Options.StatePrefix), like its
// quarantine.
func TestConfirmedRecordPerMode(t *testing.T) {
	state, a := t.TempDir(), newArtifacts(t)
	e := newTestEngine(t, Options{StateDir: state, StatePrefix: "container-"}, collectorBackend(Installed{Version: "1.2.0"}))
	if err := e.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	var s statuses
	s.install(t, e, a, "1.3.0")
	e.Close()
	if got := confirmed.New(filepath.Join(state, "container-"+confirmed.File), nil).Versions("collector"); !reflect.DeepEqual(got, []string{"1.3.0"}) {
		t.Errorf("container-mode record %v", got)
	}
	if got := confirmed.New(filepath.Join(state, confirmed.File), nil).Versions("collector"); got != nil {
		t.Errorf("binary-mode record written by container mode: %v", got)
	}
}
