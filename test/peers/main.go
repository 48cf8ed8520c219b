// Command peers builds (or finds in the cache) the upstream OpAMP Supervisor
// and the test collectors the end-to-end tests run against, and prints where
// they are. Run it as `make peers` or `go run ./test/peers [-json]
// [-goos windows]`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"

	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run() error {
	asJSON := flag.Bool("json", false, "print the peers as JSON")
	goos := flag.String("goos", "", "build the peers for this system (default: this one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	p, err := peerbuild.EnsureWith(ctx, log, peerbuild.Options{GOOS: *goos})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	fmt.Printf("cache:      %s\n", p.Dir)
	fmt.Printf("supervisor: %s (opampsupervisor %s)\n", p.Supervisor, p.SupervisorVersion)
	for _, c := range p.Collectors {
		note := ""
		if c.Broken {
			note = "  [broken: cannot start under the supervisor]"
		}
		fmt.Printf("collector %s:%s\n  executable: %s\n  archive:    %s\n  sha256:     %s (%d bytes)\n",
			c.Version, note, c.Executable, c.Archive, c.ArchiveSHA256, c.ArchiveSize)
	}
	return nil
}
