package container_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	ctr "github.com/myriarch/myriarch/agent/install/container"
	"github.com/myriarch/myriarch/internal/testenv"
)

// childEnv makes the test binary act as an updater process that installs
// one offer (and may be killed at a crash point).
const childEnv = "MYRIARCH_CT_CHILD"

type childConfig struct {
	Name     string
	StateDir string
	PubKey   string
	URL      string
	Version  string
	Hash     []byte
	Sig      []byte
}

func childOptions(c childConfig) ctr.Options {
	o := engineOptions(collector{name: c.Name}, c.StateDir, keys{pub: c.PubKey})
	return o
}

// runChild installs one offer and exits 0 when a final status was reported.
func runChild() int {
	var c childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	eng, err := ctr.New(childOptions(c), log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	if err := eng.Recover(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "recover:", err)
	}
	done := make(chan *protobufs.PackageStatus, 1)
	eng.HandlePackages(ctx, offer(c.Version, c.URL, c.Hash, c.Sig, nil), func(s *protobufs.PackageStatuses) error {
		st := s.GetPackages()[pkgName]
		if st.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Installed || st.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed {
			select {
			case done <- st:
			default:
			}
		}
		return nil
	})
	select {
	case st := <-done:
		fmt.Printf("FINAL %s %s\n", st.GetStatus(), st.GetErrorMessage())
		eng.Close()
		return 0
	case <-time.After(3 * time.Minute):
		fmt.Fprintln(os.Stderr, "no final status")
		return 3
	}
}

// The updater is SIGKILLed at every step of a swap (and of a rollback, with
// a broken image); a new updater's Recover must leave exactly one container
// named <name> running: the new version when the new container had been
// started and is healthy, the old one otherwise.
func TestCrashAtEveryStep(t *testing.T) {
	cli := testenv.Docker(t)
	k := newKeys(t)
	repo := randName("myriarch-ct-img-")
	loadImage(t, cli, fakeImage(t, imageSpec{version: "0.1.0"}), repo+":0.1.0")
	dir := t.TempDir()
	goodHash, goodSig := publishTarball(t, k, fakeImage(t, imageSpec{version: "0.8.0"}), repo+":0.8.0", dir, "good.tar")
	badHash, badSig := publishTarball(t, k, fakeImage(t, imageSpec{version: "0.9.0", exit: true}), repo+":0.9.0", dir, "bad.tar")
	t.Cleanup(func() {
		for _, v := range []string{"0.8.0", "0.9.0"} {
			removeImage(cli, repo+":"+v)
		}
	})
	srv, _ := tarballServer(t, dir)

	type tc struct {
		point, version, file, want string
		hash, sig                  []byte
		then                       string // a second crash, during the first recovery
	}
	var cases []tc
	for _, p := range []string{"admitted", "image-ready", "creating-next", "next-created", "old-stopped"} {
		cases = append(cases, tc{p, "0.8.0", "good.tar", "0.1.0", goodHash, goodSig, ""})
	}
	for _, p := range []string{"next-started", "healthy", "old-removed", "renamed", "committed"} {
		cases = append(cases, tc{p, "0.8.0", "good.tar", "0.8.0", goodHash, goodSig, ""})
	}
	for _, p := range []string{"next-started", "rollback-begin", "rollback-next-removed", "rollback-old-started", "quarantined"} {
		cases = append(cases, tc{p, "0.9.0", "bad.tar", "0.1.0", badHash, badSig, ""})
	}
	cases = append(cases, tc{"next-started", "0.8.0", "good.tar", "0.8.0", goodHash, goodSig, "recover-begin"},
		tc{"old-stopped", "0.8.0", "good.tar", "0.1.0", goodHash, goodSig, "rollback-next-removed"})
	for _, cs := range cases {
		t.Run(cs.version+"-"+cs.point+cs.then, func(t *testing.T) {
			c := startCollector(t, cli, repo+":0.1.0", true)
			before, _ := inspect(t, cli, c.name)
			uid := instanceUID(t, cli, before.ID)
			state := t.TempDir()
			cfg, _ := json.Marshal(childConfig{Name: c.name, StateDir: state, PubKey: k.pub,
				URL: srv.URL + "/" + cs.file, Version: cs.version, Hash: cs.hash, Sig: cs.sig})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+string(cfg), ctr.CrashAtEnv+"="+cs.point)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			err := cmd.Run()
			if !strings.Contains(stderr.String(), "MYRIARCH_CRASHPOINT "+cs.point) {
				t.Fatalf("the child did not reach crash point %s (err %v):\n%s", cs.point, err, stderr.String())
			}
			if cs.then != "" {
				// The restarted updater is killed again while recovering.
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), childEnv+"="+string(cfg), ctr.CrashAtEnv+"="+cs.then)
				var stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stderr, &stderr
				err := cmd.Run()
				if !strings.Contains(stderr.String(), "MYRIARCH_CRASHPOINT "+cs.then) {
					t.Fatalf("the second child did not reach crash point %s (err %v):\n%s", cs.then, err, stderr.String())
				}
			}
			// A new updater process recovers.
			eng := newEngine(t, engineOptions(c, state, k))
			if err := eng.Recover(context.Background()); err != nil {
				t.Fatalf("Recover: %v", err)
			}
			after := assertOneRunning(t, cli, c, cs.want)
			if after.HostConfig.RestartPolicy != before.HostConfig.RestartPolicy {
				t.Errorf("restart policy %+v, want %+v", after.HostConfig.RestartPolicy, before.HostConfig.RestartPolicy)
			}
			if got := instanceUID(t, cli, after.ID); got != uid {
				t.Errorf("instance UID = %s, want %s", got, uid)
			}
			if img, ok := eng.Image(); !ok || img.Version != cs.want {
				t.Errorf("Image() = %+v, want version %s", img, cs.want)
			}
			last, err := eng.LastStatuses()
			if err != nil {
				t.Fatal(err)
			}
			st := last.GetPackages()[pkgName]
			wantStatus := protobufs.PackageStatusEnum_PackageStatusEnum_Installed
			if cs.want == "0.1.0" {
				wantStatus = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
			}
			if st.GetStatus() != wantStatus || st.GetServerOfferedVersion() != cs.version {
				t.Errorf("last status %s %q for %s, want %s", st.GetStatus(), st.GetErrorMessage(), st.GetServerOfferedVersion(), wantStatus)
			}
			// The recovered status names the offer by its PackageAvailable.hash.
			if want := offerHashOf(cs.version, cs.hash); !bytes.Equal(st.GetServerOfferedHash(), want) {
				t.Errorf("last status server_offered_hash %x, want the offer hash %x (content hash %x)", st.GetServerOfferedHash(), want, cs.hash)
			}
			if _, err := os.Stat(state + "/install-journal.json"); !os.IsNotExist(err) {
				t.Errorf("journal not cleared after recovery: %v", err)
			}
		})
	}
}
