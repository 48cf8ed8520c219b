package updater_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/updater"
)

// Running the updater as `myriarch-updater run` does: load the config,
// build the updater, run it until the context ends (`run` ends it on
// SIGINT/SIGTERM; here after 200 ms, with nobody listening on the endpoint:
// the updater keeps retrying with backoff until then).
func Example() {
	dir, err := os.MkdirTemp("", "myriarch-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "updater.yaml")
	yaml := fmt.Sprintf("server:\n  endpoint: ws://127.0.0.1:9/v1/opamp\n  token: enrollment-token\n"+
		"supervisor:\n  storage_dir: %s\nstate_dir: %s\n", filepath.Join(dir, "supervisor"), filepath.Join(dir, "state"))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Println("bad config:", err) // every problem, with YAML path and line
		return
	}
	u, err := updater.New(cfg, cfg.Log.NewLogger(io.Discard))
	if err != nil {
		fmt.Println("cannot start:", err)
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer stop()
	fmt.Println("run returned:", u.Run(ctx)) // connects, reports, reconnects until ctx ends
	// Output: run returned: <nil>
}

// Building a config in code (as an in-process test does) and printing what
// the updater would report, as `myriarch-updater inspect` does.
func ExampleDescribe() {
	dir, err := os.MkdirTemp("", "myriarch-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	cfg := config.NewDefaultConfig()
	cfg.Server.Endpoint = "wss://user:pw@myriarch.example.com:4320/v1/opamp"
	cfg.Server.Token = "enrollment-token"
	cfg.Supervisor.StorageDir = filepath.Join(dir, "supervisor")
	cfg.StateDir = filepath.Join(dir, "state")
	d, err := updater.Describe(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The full view is what `inspect` prints as JSON: {"instanceUid": …,
	// "identifying": …, "nonIdentifying": …, "capabilities": […]}.
	fmt.Println(d.Identifying["service.name"], d.Identifying["service.instance.id"] == d.InstanceUID)
	fmt.Println(d.NonIdentifying[updater.AttrServerEndpoint]) // credentials never leave the host
	fmt.Println(d.NonIdentifying[updater.AttrInstallMode])
	fmt.Println(d.Capabilities)
	// Output:
	// myriarch-updater true
	// wss://myriarch.example.com:4320/v1/opamp
	// binary
	// [ReportsStatus AcceptsPackages ReportsPackageStatuses ReportsHealth ReportsHeartbeat]
}
