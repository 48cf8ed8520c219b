//go:build linux

package binary

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/encoding/protojson"
)

// helperEnv names the JSON config that turns the test binary into a
// stand-alone updater process for the crash tests.
const helperEnv = "MYRIARCH_INSTALL_TEST_HELPER"

type helperConfig struct {
	Mode          string // "offer" or "recover"
	Root, State   string
	PubKey        string
	Pidfile       string
	Storage       string
	SupervisorBin string
	Offer         json.RawMessage // protojson PackagesAvailable (offer mode)
	StatusFile    string
	MaxSize       int64 // overrides collector.max_package_size when set
}

// fileReporter appends every status set as one protojson line.
type fileReporter struct{ path string }

func (r fileReporter) SetPackageStatuses(s *protobufs.PackageStatuses) error {
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := protojson.Marshal(s)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return err
}

// helperMain is an updater process: it recovers, optionally handles one
// offer, and exits when no install is left (or is killed at a crash point).
func helperMain() int {
	var cfg helperConfig
	data, err := os.ReadFile(os.Getenv(helperEnv))
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper config:", err)
		return 2
	}
	fakeSupervisorBin = cfg.SupervisorBin
	ctl := &svcController{root: cfg.Root, storage: cfg.Storage, pidfile: cfg.Pidfile}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := testOptions(cfg.Root, cfg.State, cfg.Storage, cfg.PubKey)
	opts.Download.FreeSpace = nil // the real disk-space check
	if cfg.MaxSize > 0 {
		opts.MaxPackageSize = cfg.MaxSize
	}
	eng, err := New(opts, ctl, fileReporter{cfg.StatusFile}, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := eng.Recover(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "helper recover:", err)
	}
	if cfg.Mode == "offer" {
		var o protobufs.PackagesAvailable
		if err := protojson.Unmarshal(cfg.Offer, &o); err != nil {
			fmt.Fprintln(os.Stderr, "helper offer:", err)
			return 2
		}
		eng.Offer(ctx, &o)
	}
	for eng.Busy() && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	eng.Close()
	// VmHWM is this process's own peak RSS (getrusage's maxrss would
	// include the parent's RSS inherited across the vfork+exec).
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				fmt.Fprintf(os.Stderr, "HELPER_PEAK_RSS_KIB %s\n", strings.Fields(l)[1])
			}
		}
	}
	return 0
}

// lastStatus reads the last status set a helper reported.
func lastStatus(path string) (*protobufs.PackageStatuses, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		last = sc.Text()
	}
	var s protobufs.PackageStatuses
	if err := protojson.Unmarshal([]byte(last), &s); err != nil {
		return nil, err
	}
	return &s, nil
}
