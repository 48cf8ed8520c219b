package installtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/myriarch/myriarch/agent/install"
)

// childEnv names the JSON file that makes the test binary an updater
// process.
const childEnv = "MYRIARCH_INSTALLTEST_CHILD"

// ChildPeakRSS prefixes the line where a child reports its peak RSS (KiB).
const ChildPeakRSS = "INSTALLTEST_PEAK_RSS_KIB "

type childConfig struct {
	Fixture    string
	Site       json.RawMessage
	Offer      json.RawMessage `json:",omitempty"` // protojson PackagesAvailable, none when only recovering
	StatusFile string          // the last persisted statuses, written at the end
}

// Child must be called first by the TestMain of a package that runs the
// suite: in a child updater process it runs the updater and reports
// isChild with the exit code.
func Child(fixtures ...*Fixture) (code int, isChild bool) {
	path := os.Getenv(childEnv)
	if path == "" {
		return 0, false
	}
	if err := runChild(path, fixtures); err != nil {
		fmt.Fprintln(os.Stderr, "installtest child:", err)
		return 2, true
	}
	return 0, true
}

// runChild is an updater process: it recovers, handles the offer when there
// is one, and exits when no transaction is left, or when asked to restart,
// or is killed at a crash point.
func runChild(path string, fixtures []*Fixture) error {
	var cfg childConfig
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	if err != nil {
		return err
	}
	var f *Fixture
	for _, c := range fixtures {
		if c.Name == cfg.Fixture {
			f = c
		}
	}
	if f == nil {
		return fmt.Errorf("no fixture %q", cfg.Fixture)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	eng, err := f.Engine(cfg.Site, log, func(reason string) {
		log.Info("restart requested", "reason", reason)
		cancel()
	}, nil)
	if err != nil {
		return err
	}
	if err := eng.Recover(ctx); err != nil {
		log.Warn("recover", "err", err)
	}
	if len(cfg.Offer) > 0 && ctx.Err() == nil {
		var o protobufs.PackagesAvailable
		if err := protojson.Unmarshal(cfg.Offer, &o); err != nil {
			return err
		}
		eng.HandlePackages(ctx, &o, func(*protobufs.PackageStatuses) error { return nil })
	}
	for eng.Busy() && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := eng.Close(); err != nil {
		log.Warn("close", "err", err)
	}
	st, err := eng.LastStatuses()
	if err != nil {
		return err
	}
	b, err := protojson.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg.StatusFile, b, 0o600); err != nil {
		return err
	}
	// VmHWM is this process's own peak RSS (getrusage's maxrss would
	// include the parent's, inherited across the vfork+exec).
	if s, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(s), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				fmt.Fprintf(os.Stderr, "%s%s\n", ChildPeakRSS, strings.Fields(l)[1])
			}
		}
	}
	return nil
}

// childRun is the result of running one child updater.
type childRun struct {
	Reached bool   // killed at the armed crash point
	Output  string // its stderr
}

// RunChild runs one updater process for a site: with crashAt set it waits
// for the crash point (the child pauses there) and SIGKILLs it; otherwise,
// or when the child ends before the point, it waits for it to exit. It
// returns the last persisted statuses and what happened.
func RunChild(t testing.TB, f *Fixture, site json.RawMessage, offer *protobufs.PackagesAvailable, crashAt string) (*protobufs.PackageStatuses, childRun) {
	t.Helper()
	dir := t.TempDir()
	cfg := childConfig{Fixture: f.Name, Site: site, StatusFile: filepath.Join(dir, "statuses.json")}
	if offer != nil {
		b, err := protojson.Marshal(offer)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Offer = b
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "child.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	if crashAt != "" {
		cmd.Env = append(cmd.Env, install.CrashAtEnv+"="+crashAt, install.CrashModeEnv+"=pause")
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	reached := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if crashAt != "" && sc.Text() == "MYRIARCH_CRASHPOINT "+crashAt {
				close(reached)
			}
		}
	}()
	var run childRun
	timer := time.AfterFunc(4*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	select {
	case <-reached:
		cmd.Process.Kill() // SIGKILL: no deferred function or cleanup runs
		run.Reached = true
		<-done
		cmd.Wait()
	case <-done:
		if err := cmd.Wait(); err != nil {
			t.Fatalf("updater process: %v\n%s", err, strings.Join(lines, "\n"))
		}
	}
	run.Output = strings.Join(lines, "\n")
	if run.Reached {
		return nil, run
	}
	b, err := os.ReadFile(cfg.StatusFile)
	if err != nil {
		t.Fatalf("updater process wrote no statuses: %v\n%s", err, run.Output)
	}
	var st protobufs.PackageStatuses
	if err := protojson.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return &st, run
}
