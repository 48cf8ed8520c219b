//go:build linux

package binary

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"net/http"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/encoding/protojson"
)

// crashOutcome says which version must run after recovering from a crash
// at a point.
func crashOutcome(point string) (badArtifact, wantNew bool) {
	switch point {
	case cpRollbackBegin, cpRollbackStopped, cpFailedLogKept, cpRollbackLinkStage, cpRollbackSwitched,
		cpRollbackStarted, cpRollbackVerified, cpQuarantined:
		return true, false
	case cpSwitched, cpSwitchRecorded, cpSupervisorStarted, cpHealthGate, cpHealthy, cpInstalledRecorded,
		cpGarbageCollected, cpCommitted, cpRecoverBegin:
		return false, true
	}
	return false, false
}

// TestCrashRecovery kills a real updater process (SIGKILL) at every crash
// point, restarts it, and checks that the collector then runs the old or the
// new version, complete, and that the server was told what happened.
func TestCrashRecovery(t *testing.T) {
	if len(CrashPoints) < 20 {
		t.Fatalf("only %d crash points", len(CrashPoints))
	}
	for _, point := range CrashPoints {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			bad, wantNew := crashOutcome(point)
			e := newEnv(t)
			mode := "ok"
			if bad {
				mode = "crash"
			}
			art := collectorBinary("0.149.0", mode)
			url := e.serve("/v", art)
			if point == cpDownloading {
				// Slow enough for a progress tick to happen mid-download.
				url = e.handle("/v", func(w http.ResponseWriter, r *http.Request) {
					http.ServeContent(&slowWriter{w}, r, "a", time.Time{}, bytes.NewReader(art))
				})
			}
			o := offer(pkg, "0.149.0", url, art, e.sign(art))
			newDir := dirFor("0.149.0", art)

			first := point
			if point == cpRecoverBegin {
				first = cpHealthGate
			}
			e.runHelper(t, "offer", o, first, true)
			if point == cpRecoverBegin {
				e.runHelper(t, "recover", nil, cpRecoverBegin, true)
			}
			statusFile := e.runHelper(t, "recover", nil, "", false)

			// The transaction is over.
			if _, err := os.Stat(filepath.Join(e.state, "install-journal.json")); !os.IsNotExist(err) {
				t.Fatalf("journal still present after recovery: %v", err)
			}
			wantDir, wantVer := e.initialDir, "0.148.0"
			if wantNew {
				wantDir, wantVer = newDir, "0.149.0"
			}
			if got := e.current(); got != wantDir {
				t.Fatalf("current -> %s, want %s", got, wantDir)
			}
			e.waitCollector(wantDir)
			out, err := exec.Command(filepath.Join(e.root, "current", exeName), "--version").Output()
			if err != nil || !strings.Contains(string(out), wantVer) {
				t.Fatalf("current executable: %q %v", out, err)
			}
			ents, _ := os.ReadDir(filepath.Join(e.root, "versions"))
			for _, d := range ents {
				if strings.HasSuffix(d.Name(), ".tmp") || strings.HasSuffix(d.Name(), ".hoist") {
					t.Fatalf("half-written version directory left: %s", d.Name())
				}
			}
			// The server is told.
			st, err := lastStatus(statusFile)
			if err != nil {
				t.Fatal(err)
			}
			ps := st.GetPackages()[pkg]
			switch {
			case ps == nil:
				t.Fatal("no status for the collector package")
			case wantNew && (ps.Status != stInstalled || ps.AgentHasVersion != "0.149.0"):
				t.Fatalf("want Installed 0.149.0, got %v", ps)
			case !wantNew && (ps.Status != stFailed || ps.AgentHasVersion != "0.148.0" || ps.ErrorMessage == ""):
				t.Fatalf("want InstallFailed with 0.148.0 kept, got %v", ps)
			}
			if bad {
				if _, err := os.Stat(filepath.Join(e.state, "failed", "0.149.0", "agent.log")); err != nil {
					t.Fatalf("failed collector log not kept: %v", err)
				}
			}
			if want := o.Packages[pkg].Hash; !bytes.Equal(ps.ServerOfferedHash, want) {
				t.Fatalf("server_offered_hash %x after recovery, want the offer hash %x (content hash %x)",
					ps.ServerOfferedHash, want, o.Packages[pkg].File.ContentHash)
			}
			t.Logf("recovered from %s: %v %q", point, ps.Status, ps.ErrorMessage)
		})
	}
}

type slowWriter struct{ http.ResponseWriter }

func (w *slowWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), 64<<10)
		m, err := w.ResponseWriter.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		w.ResponseWriter.(http.Flusher).Flush()
		p = p[k:]
		time.Sleep(20 * time.Millisecond)
	}
	return n, nil
}

// runHelper runs one updater process. With crashAt set it waits for the
// crash point (the process pauses there) and SIGKILLs it; otherwise it
// waits for a clean exit. It returns the status file.
func (e *env) runHelper(t *testing.T, mode string, o *protobufs.PackagesAvailable, crashAt string, expectCrash bool) string {
	t.Helper()
	statusFile := filepath.Join(e.dir, "statuses-"+mode+"-"+crashAt+".jsonl")
	cfg := helperConfig{Mode: mode, Root: e.root, State: e.state, PubKey: e.pub.String(), Pidfile: e.ctl.pidfile, Storage: e.storage,
		SupervisorBin: fakeSupervisorBin, StatusFile: statusFile}
	if o != nil {
		b, _ := protojson.Marshal(o)
		cfg.Offer = b
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(e.dir, "helper-"+mode+"-"+crashAt+".json")
	os.WriteFile(cfgPath, data, 0o600)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+cfgPath)
	if crashAt != "" {
		cmd.Env = append(cmd.Env, CrashAtEnv+"="+crashAt, CrashModeEnv+"=pause")
	}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	reached := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if crashAt != "" && sc.Text() == "MYRIARCH_CRASHPOINT "+crashAt {
				close(reached)
			}
		}
	}()
	if expectCrash {
		select {
		case <-reached:
			cmd.Process.Kill() // SIGKILL
		case <-done:
			cmd.Wait()
			t.Fatalf("helper exited without reaching crash point %s:\n%s", crashAt, strings.Join(lines, "\n"))
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("crash point %s not reached:\n%s", crashAt, strings.Join(lines, "\n"))
		}
		<-done
		cmd.Wait()
		return statusFile
	}
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	<-done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper %s: %v\n%s", mode, err, strings.Join(lines, "\n"))
	}
	if testing.Verbose() {
		t.Log(strings.Join(slices.Clip(lines), "\n"))
	}
	return statusFile
}

var _ = context.Background
