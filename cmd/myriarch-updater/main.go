// Command myriarch-updater is the host agent of myriarch. It connects to
// the myriarch server over OpAMP, reports itself and pairs itself with the
// host's OpenTelemetry Collector (run by the upstream OpAMP Supervisor, or
// in a container), and installs the collector versions the server offers,
// and new versions of itself: each download is verified (SHA-256 and a
// minisign signature from a locally pinned key), switched to, checked for
// health, and rolled back when it does not come up. It runs as an OS
// service (systemd on Linux, the SCM on Windows) or in the foreground, for
// example as a container's entrypoint.
//
// The configuration is a YAML file (--config); the MYRIARCH_* variables
// listed by `myriarch-updater help` override its keys, and without the file
// they and the defaults are the whole configuration.
//
// Exit status:
//
//	0  success
//	1  failure: invalid configuration, the updater or a service command
//	   failed; `status` could not read everything it reports
//	2  usage error
//	3  `run` only: the updater replaced its own binary (a self-update) or
//	   restored the previous one (a self-update that did not come up), and
//	   exits so that the service manager starts the binary now in place.
//	   Non-zero on purpose: systemd's Restart=on-failure and the Windows
//	   service's failure actions restart the service 5 s later. Run by hand,
//	   start it again yourself.
//
// This file only parses the command line; the work lives in agent/….
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/providers"
	"github.com/myriarch/myriarch/agent/service"
	"github.com/myriarch/myriarch/agent/updater"
	"github.com/myriarch/myriarch/internal/buildinfo"
)

const usage = `usage: myriarch-updater <command> [--config FILE]

commands:
  run        run in the foreground (what the service runs): connect to the server,
             install the collector (and updater) versions it offers
  validate   check the configuration; prints every problem with its YAML path and line
  inspect    print the AgentDescription it would report, as JSON, without connecting
             (--providers [--watch]: print the variable-substitution providers' data instead)
  install    install the OS service (systemd / Windows SCM) running "run --config FILE"
  uninstall  remove the OS service
  start      start the OS service
  stop       stop the OS service
  setup      set this Windows host up as a site (what install.ps1 runs): check the
             settings and the signed artifacts, install the collector, the Supervisor
             and the updater, write their configurations, register and start their
             services (setup --help lists its flags; --uninstall removes them)
  status     print the OS service state and what the state dir records: the server
             connection, the collector, the supervisor, the offer in progress and the
             last install results (--json: as JSON); safe while the service runs
  version    print the version

--config defaults to %s

environment (each overrides the file's key; without the file, the defaults and
these are the configuration; empty is unset):
%s
  A token variable replaces both server.token and server.token_file (set only
  one of them); the token file is read again at every connection.

exit status:
  0  success
  1  failure (status: something it reports could not be read)
  2  usage error
  3  run: exited after a self-update so that the service manager starts the new
     binary (the service restarts it; by hand, start it again)
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func printUsage(w io.Writer) { fmt.Fprintf(w, usage, config.DefaultPath(), envUsage()) }

// envUsage lists config.Environment, one variable a line.
func envUsage() string {
	var b strings.Builder
	for _, v := range config.Environment() {
		fmt.Fprintf(&b, "  %-31s %-27s %s\n", v.Name, v.Key, v.Doc)
	}
	return b.String()
}

// run executes one command and returns the process exit code (see the
// package documentation): 0 success, 1 failure, 2 usage error, 3 `run`
// exited to be restarted after a self-update.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "help":
		printUsage(stdout)
		return 0
	case "version", "--version":
		fmt.Fprintf(stdout, "myriarch-updater %s\n", buildinfo.Version)
		return 0
	case "setup":
		return cmdSetup(ctx, rest, stdout, stderr)
	}

	fs := flag.NewFlagSet("myriarch-updater "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultPath(), "configuration file")
	var inspectProviders, watch, asJSON, asService *bool
	switch cmd {
	case "run":
		asService = fs.Bool("service", false, "set by the installed service: the service manager started this process")
	case "inspect":
		inspectProviders = fs.Bool("providers", false, "print the providers' context and mappings as JSON")
		watch = fs.Bool("watch", false, "with --providers: keep printing every new snapshot")
	case "status":
		asJSON = fs.Bool("json", false, "print the status as JSON")
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "myriarch-updater %s: unexpected argument %q\n", cmd, fs.Arg(0))
		return 2
	}

	switch cmd {
	case "validate":
		return cmdValidate(*configPath, stdout, stderr)
	case "run":
		return cmdRun(ctx, *configPath, *asService, stderr)
	case "inspect":
		if *watch && !*inspectProviders {
			fmt.Fprintln(stderr, "myriarch-updater inspect: --watch needs --providers")
			return 2
		}
		return cmdInspect(ctx, *configPath, *inspectProviders, *watch, stdout, stderr)
	case "status":
		return cmdStatus(*configPath, *asJSON, stdout, stderr, newServiceStatus)
	case "install", "uninstall", "start", "stop":
		return cmdService(cmd, *configPath, stdout, stderr)
	}
	fmt.Fprintf(stderr, "myriarch-updater: unknown command %q\n", cmd)
	printUsage(stderr)
	return 2
}

// load reads the config, printing every problem on failure.
func load(path string, stderr io.Writer) (*config.Config, bool) {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	return cfg, true
}

func cmdValidate(path string, stdout, stderr io.Writer) int {
	cfg, ok := load(path, stderr)
	if !ok {
		return 1
	}
	source := path
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		source = "from the environment (no file " + path + ")"
	}
	fmt.Fprintf(stdout, "config %s: valid\n", source)
	if vars := config.EnvInUse(); len(vars) > 0 {
		fmt.Fprintf(stdout, "overridden by the environment: %s\n", strings.Join(vars, ", "))
	}
	for _, w := range config.Warnings(path, cfg) {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	return 0
}

func cmdRun(ctx context.Context, path string, byManager bool, stderr io.Writer) int {
	out := service.OpenLog(byManager)
	defer out.Close()
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		if out.System() { // a Windows service's stderr goes nowhere
			out.Logger(config.NewDefaultConfig().Log.NewHandler, stderr).Error("cannot start: invalid configuration", "err", err)
		}
		return 1
	}
	log := out.Logger(cfg.Log.NewHandler, stderr)
	// Own telemetry: counted from the start, exported (logs too) once the
	// server offers where.
	own := newOwnTelemetry(log, cfg.Trust)
	log = slog.New(own.exporter.Handler(log.Handler()))
	defer own.shutdown(log)
	for _, w := range config.Warnings(path, cfg) {
		log.Warn("configuration: " + w)
	}
	err = service.Run(ctx, log, byManager, func(ctx context.Context) error { return runUpdater(ctx, cfg, log, own) })
	var restart *restartRequest
	switch {
	case errors.As(err, &restart):
		log.Info("exiting so the service manager starts the new updater", "reason", restart.reason)
	case err != nil:
		log.Error("updater failed", "err", err)
	}
	return service.ExitCode(err)
}

func cmdInspect(ctx context.Context, path string, providersOnly, watch bool, stdout, stderr io.Writer) int {
	cfg, ok := load(path, stderr)
	if !ok {
		return 1
	}
	if providersOnly {
		log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if watch {
			var stop context.CancelFunc
			ctx, stop = signalContext(ctx)
			defer stop()
		}
		if err := providers.Inspect(ctx, cfg.Providers, watch, stdout, log); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "myriarch-updater inspect --providers: %v\n", err)
			return 1
		}
		return 0
	}
	d, err := updater.Describe(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "myriarch-updater inspect: %v\n", err)
		return 1
	}
	for _, p := range d.Problems {
		fmt.Fprintf(stderr, "warning: %v (the updater would report itself unhealthy)\n", p)
	}
	if err := writeJSON(stdout, d); err != nil {
		fmt.Fprintf(stderr, "myriarch-updater inspect: %v\n", err)
		return 1
	}
	return 0
}

// writeJSON prints v indented, without HTML escaping (this is for people and jq).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func cmdService(cmd, path string, stdout, stderr io.Writer) int {
	abs, err := filepath.Abs(path)
	if err != nil {
		fmt.Fprintf(stderr, "myriarch-updater %s: %v\n", cmd, err)
		return 1
	}
	if cmd == "install" {
		// Refuse to install a service that would fail at its first start.
		if _, ok := load(abs, stderr); !ok {
			return 1
		}
		if vars := config.EnvInUse(); len(vars) > 0 {
			fmt.Fprintf(stderr, "warning: %s checked here come from this shell; the service does not inherit them "+
				"(on Linux put them in /etc/default/%s)\n", strings.Join(vars, ", "), service.Name)
		}
	}
	m, err := service.New(abs)
	if err != nil {
		fmt.Fprintf(stderr, "myriarch-updater %s: %v\n", cmd, err)
		return 1
	}
	switch cmd {
	case "install":
		err = m.Install()
	case "uninstall":
		err = m.Uninstall()
	case "start":
		err = m.Start()
	case "stop":
		err = m.Stop()
	}
	if err != nil {
		fmt.Fprintf(stderr, "myriarch-updater %s: %v\n", cmd, err)
		return 1
	}
	if m.Warning != "" {
		fmt.Fprintf(stderr, "warning: %s\n", m.Warning)
	}
	fmt.Fprintf(stdout, "%s: %s done (%s)\n", service.Name, cmd, m.Platform())
	return 0
}

// newServiceStatus is the OS service that `status` reports on.
func newServiceStatus(configPath string) (serviceStatus, error) {
	m, err := service.New(configPath)
	if err != nil {
		return nil, err
	}
	return m, nil
}
