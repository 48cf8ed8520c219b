// Package e2e runs the real upstream OpAMP Supervisor and real collectors
// (built by test/peers) under a real myriarch-updater against a real
// myriarchd, all as separate processes on loopback.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

var (
	peers *peerbuild.Peers
	bins  site.Bins
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode")
		os.Exit(0)
	}
	os.Exit(testkit.RunChecked(func() int { return run(m) }))
}

// run builds the peers and myriarch's binaries, then runs the tests.
func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var err error
	peers, err = peerbuild.Ensure(ctx, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building peers:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "myriarch-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building binaries:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bins, err = site.BuildBins(ctx, dir, "0.1.0-e2e"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building binaries:", err)
		return 1
	}
	cancel()
	return m.Run()
}
