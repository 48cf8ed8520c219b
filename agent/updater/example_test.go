package updater_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/signal"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/updater"
)

// Running the updater as `myriarch-updater run` does.
func Example() {
	cfg, err := config.Load("/etc/myriarch/updater.yaml")
	if err != nil {
		slog.Error("bad config", "err", err) // every problem, with YAML path and line
		return
	}
	u, err := updater.New(cfg, cfg.Log.NewLogger(os.Stderr))
	if err != nil {
		slog.Error("cannot start", "err", err)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	_ = u.Run(ctx) // connects, reports, reconnects until ctx ends
}

// Building a config in code (as an in-process test does) and printing what
// the updater would report, as `myriarch-updater inspect` does.
func ExampleDescribe() {
	cfg := config.NewDefaultConfig()
	cfg.Server.Endpoint = "ws://127.0.0.1:4320/v1/opamp"
	cfg.Server.Token = "enrollment-token"
	cfg.Supervisor.StorageDir = "/var/lib/otelcol/supervisor"
	cfg.StateDir = "/var/lib/myriarch-updater"
	d, err := updater.Describe(cfg)
	if err != nil {
		return
	}
	_ = json.NewEncoder(os.Stdout).Encode(d) // {"instanceUid": …, "identifying": …, "nonIdentifying": …, "capabilities": […]}
}
