package container_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/install"
	ctr "github.com/myriarch/myriarch/agent/install/container"
	"github.com/myriarch/myriarch/agent/install/installtest"
	"github.com/myriarch/myriarch/internal/testenv"
)

// TestContract runs the install contract suite against the container
// back-end on a real Docker engine: a real updater process SIGKILLed at
// every crash point of a swap, every bad offer (image tarballs: wrong
// SHA-256, bad or untrusted signatures, bad servers…) refused with the
// collector container untouched. Each site holds the engine (newSite), not
// the whole suite, so a test that needs the engine alone gets its turn.
func TestContract(t *testing.T) {
	t.Parallel()
	installtest.Run(t, fixture)
}

var fixture = &installtest.Fixture{
	Name: "container", Package: pkgName, Type: protobufs.PackageType_PackageType_Addon,
	CrashPoints: ctr.CrashPoints, StatePrefix: ctr.StatePrefix,
	NewSite: func(t *testing.T) installtest.Site { return newSite(t) },
	Engine: func(cfg json.RawMessage, log *slog.Logger, _ func(string), mod func(*install.Options)) (*install.Engine, error) {
		var c siteConfig
		if err := json.Unmarshal(cfg, &c); err != nil {
			return nil, err
		}
		o := engineOptions(collector{name: c.Name}, c.State, keys{pub: c.PubKey})
		o.install.Download.Attempts = 3
		if mod != nil {
			mod(&o.install)
		}
		eng, err := buildEngine(o, log)
		if err != nil {
			return nil, err
		}
		return eng.Engine, nil
	},
	BadOffers: func(t *testing.T, s installtest.Site) []installtest.BadOffer {
		cs := s.(*site)
		return []installtest.BadOffer{{
			Name: "image labelled with another version", Want: `"0.4.1", the offer says version "0.4.0"`, Quarantine: installtest.Blocked,
			Offer: func(t testing.TB, _ installtest.Site) *protobufs.PackagesAvailable {
				data := cs.Artifact(t, "0.4.1", false)
				return installtest.Offer(pkgName, protobufs.PackageType_PackageType_Addon, "0.4.0", cs.srv.Serve("/label", data), data, cs.srv.Sign(data))
			},
		}}
	},
}

// site is a collector container started from the fake 0.1.0 image, with
// image tarballs of other versions served and signed.
type site struct {
	cli  *client.Client
	c    collector
	repo string
	srv  *installtest.Server
	uid  string // the supervisor instance UID before any swap
	pol  string // the restart policy
	mu   sync.Mutex
	arts map[string][]byte
}

func newSite(t *testing.T) *site {
	cli := testenv.Docker(t)
	s := &site{cli: cli, repo: randName("myriarch-ct-img-"), srv: installtest.NewServer(t), arts: map[string][]byte{}}
	loadImage(t, cli, fakeImage(t, imageSpec{version: "0.1.0"}), s.repo+":0.1.0")
	s.c = startCollector(t, cli, s.repo+":0.1.0", true)
	before, _ := inspect(t, cli, s.c.name)
	s.uid, s.pol = instanceUID(t, cli, before.ID), string(before.HostConfig.RestartPolicy.Name)
	return s
}

type siteConfig struct{ Name, State, PubKey string }

func (s *site) Config(stateDir string) json.RawMessage {
	b, _ := json.Marshal(siteConfig{Name: s.c.name, State: stateDir, PubKey: s.srv.PublicKey()})
	return b
}

func (s *site) Versions() (string, string) { return "0.1.0", "0.8.0" }

// Artifact is a `docker save` tarball of a fake image of version; a broken
// one exits at once.
func (s *site) Artifact(t testing.TB, version string, broken bool) []byte {
	key := fmt.Sprint(version, broken)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.arts[key]; ok {
		return b
	}
	ref := fmt.Sprintf("%s:%s", s.repo, version)
	if broken {
		ref += "-broken"
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	writeTarball(t, fakeImage(t, imageSpec{version: version, exit: broken}), ref, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeImage(s.cli, ref) })
	s.arts[key] = b
	return b
}

func (s *site) Server() *installtest.Server { return s.srv }

func (s *site) Running(t testing.TB) (string, string) {
	t.Helper()
	c, ok := inspect(t, s.cli, s.c.name)
	if !ok {
		t.Fatalf("no container named %s", s.c.name)
	}
	v := waitServing(t, s.c.port, 20*time.Second)
	return c.ID + " " + c.State.StartedAt, v
}

// Check: exactly one container named <name> runs the expected version, no
// <name>-next, the restart policy and the supervisor instance UID are as
// before, no swap state is left.
func (s *site) Check(t testing.TB, stateDir string, isNew bool) {
	t.Helper()
	old, newV := s.Versions()
	want := old
	if isNew {
		want = newV
	}
	after := assertOneRunning(t, s.cli, s.c, want)
	if string(after.HostConfig.RestartPolicy.Name) != s.pol {
		t.Errorf("restart policy %q, want %q", after.HostConfig.RestartPolicy.Name, s.pol)
	}
	if got := instanceUID(t, s.cli, after.ID); got != s.uid {
		t.Errorf("instance UID = %s, want %s", got, s.uid)
	}
	if _, err := os.Stat(filepath.Join(stateDir, ctr.StatePrefix+"swap.json")); err == nil {
		t.Error("swap state left behind")
	}
}

func (s *site) InstalledFile() string { return ctr.InstalledFile }
