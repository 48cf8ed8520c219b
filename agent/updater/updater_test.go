package updater

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/supervisorstate"
	"github.com/myriarch/myriarch/internal/buildinfo"
)

const (
	collectorUID1 = "01a23624-fe71-761b-9dc4-b4d1fba94a8f"
	collectorUID2 = "0192f6a0-7b7c-7cc4-8a4e-4bd5a3d26a11"
)

func testConfig(t *testing.T, endpoint string) *config.Config {
	t.Helper()
	cfg := config.NewDefaultConfig()
	cfg.Server.Endpoint = endpoint
	cfg.Server.Token = "s3cret-token"
	cfg.Supervisor.StorageDir = filepath.Join(t.TempDir(), "supervisor")
	cfg.StateDir = filepath.Join(t.TempDir(), "updater")
	return cfg
}

func writeState(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".persistent_state.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, supervisorstate.Path(dir)); err != nil { // atomic, as the supervisor does
		t.Fatal(err)
	}
}

// runUpdater runs u until the test ends and checks Run's result.
func runUpdater(t *testing.T, u *Updater) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- u.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
}

func newUpdater(t *testing.T, cfg *config.Config, opts ...Option) *Updater {
	t.Helper()
	opts = append([]Option{WithStatePollInterval(20 * time.Millisecond)}, opts...)
	u, err := New(cfg, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestReportsToRealOpAMPServer(t *testing.T) {
	srv := startServer(t, 0)
	cfg := testConfig(t, srv.wsURL())
	writeState(t, cfg.Supervisor.StorageDir, "instance_id: "+collectorUID1+"\nlast_remote_config_status: null\n")
	u := newUpdater(t, cfg)
	runUpdater(t, u)

	sn := srv.waitFor(t, "the collector instance UID", func(s snapshot) bool {
		return s.nonIdentifying[AttrCollectorInstanceUID] == collectorUID1 && s.health != nil
	})
	if !slices.Contains(sn.authHeaders, "Bearer s3cret-token") {
		t.Errorf("Authorization headers = %q", sn.authHeaders)
	}
	if !strings.HasPrefix(sn.userAgents[0], "myriarch-updater/") {
		t.Errorf("User-Agent = %q", sn.userAgents)
	}
	if got, want := protobufs.AgentCapabilities(sn.caps), Capabilities; got != want {
		t.Errorf("capabilities = %v, want %v", CapabilityNames(got), CapabilityNames(want))
	}
	if uid, _ := uuid.FromBytes(sn.uid); uid != u.InstanceUID() || uid.Version() != 7 {
		t.Errorf("instance uid = %v, updater says %v", uid, u.InstanceUID())
	}
	wantIdent := map[string]string{
		"service.name":        "myriarch-updater",
		"service.version":     buildinfo.Version,
		"service.instance.id": u.InstanceUID().String(),
	}
	for k, v := range wantIdent {
		if sn.identifying[k] != v {
			t.Errorf("identifying %s = %q, want %q", k, sn.identifying[k], v)
		}
	}
	hn, _ := os.Hostname()
	wantNon := map[string]string{
		"host.name":              hn,
		"host.arch":              runtime.GOARCH,
		"os.type":                runtime.GOOS,
		AttrInstallMode:          "binary",
		AttrServerEndpoint:       srv.wsURL(),
		AttrSupervisorService:    "opampsupervisor",
		AttrCollectorInstanceUID: collectorUID1,
	}
	for k, v := range wantNon {
		if sn.nonIdentifying[k] != v {
			t.Errorf("non-identifying %s = %q, want %q", k, sn.nonIdentifying[k], v)
		}
	}
	if sn.nonIdentifying["os.description"] == "" {
		t.Error("os.description missing")
	}
	if _, ok := sn.nonIdentifying[AttrCollectorImageVersion]; ok {
		t.Error("image version reported in binary mode")
	}
	if !sn.health.Healthy {
		t.Errorf("health = %+v", sn.health)
	}
}

func TestPairingAttributeAppearsAndChanges(t *testing.T) {
	srv := startServer(t, 0)
	cfg := testConfig(t, srv.wsURL())
	u := newUpdater(t, cfg)
	runUpdater(t, u)

	sn := srv.waitFor(t, "a description", func(s snapshot) bool { return s.nonIdentifying != nil })
	if v, ok := sn.nonIdentifying[AttrCollectorInstanceUID]; ok {
		t.Fatalf("collector UID reported before the supervisor state exists: %q", v)
	}
	if !sn.health.GetHealthy() {
		t.Errorf("a not-yet-created state file made the updater unhealthy: %+v", sn.health)
	}

	writeState(t, cfg.Supervisor.StorageDir, "instance_id: "+collectorUID1+"\nlast_remote_config_status: null\n")
	srv.waitFor(t, "the UID appear", func(s snapshot) bool { return s.nonIdentifying[AttrCollectorInstanceUID] == collectorUID1 })

	writeState(t, cfg.Supervisor.StorageDir, "instance_id: "+collectorUID2+"\nlast_remote_config_status: {status: 2, last_remote_config_hash: abcd, error_message: \"\"}\n")
	srv.waitFor(t, "the UID change", func(s snapshot) bool { return s.nonIdentifying[AttrCollectorInstanceUID] == collectorUID2 })
	if got := u.Description().NonIdentifying[AttrCollectorInstanceUID]; got != collectorUID2 {
		t.Errorf("Description() = %q", got)
	}
}

func TestMalformedStateIsUnhealthyAndRecovers(t *testing.T) {
	srv := startServer(t, 0)
	cfg := testConfig(t, srv.wsURL())
	writeState(t, cfg.Supervisor.StorageDir, "instance_id: "+collectorUID1+"\n")
	u := newUpdater(t, cfg)
	runUpdater(t, u)
	srv.waitFor(t, "the UID", func(s snapshot) bool { return s.nonIdentifying[AttrCollectorInstanceUID] == collectorUID1 })

	writeState(t, cfg.Supervisor.StorageDir, "instance_id: [unterminated\n")
	sn := srv.waitFor(t, "unhealthy and unpaired", func(s snapshot) bool {
		_, paired := s.nonIdentifying[AttrCollectorInstanceUID]
		return s.health != nil && !s.health.Healthy && !paired
	})
	if !strings.Contains(sn.health.LastError, "malformed") || !strings.Contains(sn.health.LastError, supervisorstate.FileName) {
		t.Errorf("LastError = %q, want the reason and the file", sn.health.LastError)
	}
	c := sn.health.ComponentHealthMap[componentSupervisorState]
	if c == nil || c.Healthy || c.LastError == "" {
		t.Errorf("component health = %+v", c)
	}

	// Still running: repairing the file makes it healthy and paired again.
	writeState(t, cfg.Supervisor.StorageDir, "instance_id: "+collectorUID2+"\n")
	srv.waitFor(t, "recovery", func(s snapshot) bool {
		return s.health != nil && s.health.Healthy && s.nonIdentifying[AttrCollectorInstanceUID] == collectorUID2
	})
}

func TestUnreadableStateAtStartIsUnhealthy(t *testing.T) {
	srv := startServer(t, 0)
	cfg := testConfig(t, srv.wsURL())
	// A directory where the file should be cannot be read, even by root.
	if err := os.MkdirAll(supervisorstate.Path(cfg.Supervisor.StorageDir), 0o700); err != nil {
		t.Fatal(err)
	}
	runUpdater(t, newUpdater(t, cfg))
	sn := srv.waitFor(t, "unhealthy", func(s snapshot) bool { return s.health != nil && !s.health.Healthy })
	if !strings.Contains(sn.health.LastError, supervisorstate.FileName) {
		t.Errorf("LastError = %q", sn.health.LastError)
	}
}

func offer() *protobufs.PackagesAvailable {
	return &protobufs.PackagesAvailable{
		AllPackagesHash: []byte{1, 2, 3},
		Packages: map[string]*protobufs.PackageAvailable{
			"otelcol-contrib": {Type: protobufs.PackageType_PackageType_TopLevel, Version: "0.149.0", Hash: []byte{9, 9}},
		},
	}
}

func TestPackageOffersRefusedWithoutHandler(t *testing.T) {
	srv := startServer(t, 0)
	srv.setOffer(offer())
	runUpdater(t, newUpdater(t, testConfig(t, srv.wsURL())))
	sn := srv.waitFor(t, "package statuses", func(s snapshot) bool { return len(s.pkgStatuses.GetPackages()) > 0 })
	st := sn.pkgStatuses.Packages["otelcol-contrib"]
	if st.Status != protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed || st.ErrorMessage != NotEnabledMessage ||
		st.ServerOfferedVersion != "0.149.0" || string(sn.pkgStatuses.ServerProvidedAllPackagesHash) != "\x01\x02\x03" {
		t.Errorf("statuses = %+v", sn.pkgStatuses)
	}
}

type recordingHandler struct {
	mu     sync.Mutex
	offers []*protobufs.PackagesAvailable
}

func (h *recordingHandler) HandlePackages(ctx context.Context, o *protobufs.PackagesAvailable, report StatusReporter) {
	h.mu.Lock()
	h.offers = append(h.offers, o)
	h.mu.Unlock()
	go func() { // as a real engine would: work after returning
		_ = report(&protobufs.PackageStatuses{
			ServerProvidedAllPackagesHash: o.AllPackagesHash,
			Packages: map[string]*protobufs.PackageStatus{"otelcol-contrib": {
				Name: "otelcol-contrib", ServerOfferedVersion: "0.149.0",
				Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installing,
			}},
		})
	}()
}

func (h *recordingHandler) LastStatuses() (*protobufs.PackageStatuses, error) { return nil, nil }

func TestPackageHandlerReceivesOffers(t *testing.T) {
	srv := startServer(t, 0)
	srv.setOffer(offer())
	h := &recordingHandler{}
	runUpdater(t, newUpdater(t, testConfig(t, srv.wsURL()), WithPackageHandler(h)))
	sn := srv.waitFor(t, "Installing", func(s snapshot) bool {
		return s.pkgStatuses.GetPackages()["otelcol-contrib"].GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Installing
	})
	if sn.pkgStatuses.ErrorMessage != "" {
		t.Errorf("statuses = %+v", sn.pkgStatuses)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.offers) != 1 || h.offers[0].Packages["otelcol-contrib"].Version != "0.149.0" {
		t.Errorf("offers = %v", h.offers)
	}
}

func TestRetriesAfterRejectedConnection(t *testing.T) {
	srv := startServer(t, 2)
	runUpdater(t, newUpdater(t, testConfig(t, srv.wsURL())))
	sn := srv.waitFor(t, "a description after two 401s", func(s snapshot) bool { return s.identifying != nil })
	if sn.rejected != 2 || len(sn.authHeaders) < 3 {
		t.Errorf("rejected %d, attempts %d", sn.rejected, len(sn.authHeaders))
	}
}

func TestPlainHTTPTransportAndTokenFile(t *testing.T) {
	srv := startServer(t, 0)
	cfg := testConfig(t, srv.httpURL())
	cfg.Server.Token = ""
	cfg.Server.TokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(cfg.Server.TokenFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runUpdater(t, newUpdater(t, cfg, WithHeartbeatInterval(100*time.Millisecond)))
	sn := srv.waitFor(t, "a description over HTTP", func(s snapshot) bool { return s.identifying != nil })
	if sn.authHeaders[0] != "Bearer from-file" {
		t.Errorf("Authorization = %q", sn.authHeaders)
	}
	if sn.nonIdentifying[AttrServerEndpoint] != srv.httpURL() {
		t.Errorf("endpoint attribute = %q", sn.nonIdentifying[AttrServerEndpoint])
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	cfg := config.NewDefaultConfig() // no endpoint, no token
	cfg.StateDir = t.TempDir()
	_, err := New(cfg, nil)
	var fe *config.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("New = %v, want a config.FieldError", err)
	}
}

func TestRunTwiceFails(t *testing.T) {
	srv := startServer(t, 0)
	u := newUpdater(t, testConfig(t, srv.wsURL()))
	runUpdater(t, u)
	srv.waitFor(t, "a description", func(s snapshot) bool { return s.identifying != nil })
	if err := u.Run(context.Background()); err == nil {
		t.Error("second Run accepted")
	}
}
