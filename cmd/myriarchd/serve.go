package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/myriarch/myriarch/internal/cmdline"
	"github.com/myriarch/myriarch/server"
)

// serveCommand parses serve's flags and resolves every setting; done says
// there is nothing to run (help printed: 0; a usage or config problem: 2).
func serveCommand(args []string, getenv func(string) (string, bool), stdout, stderr io.Writer) (cfg serveConfig, code int, done bool) {
	cfg = defaultServeConfig()
	c := cmdline.New("myriarchd", "serve", "serve [flags]", serveAbout)
	c.Flags = printSettings
	bindFlags(c.FS, &cfg)
	if code, done := c.Parse(args, stdout, stderr); done {
		return cfg, code, true
	}
	if c.FS.NArg() > 0 {
		return cfg, c.UsageError(stderr, "unexpected argument %q", c.FS.Arg(0)), true
	}
	if err := resolve(c.FS, &cfg, getenv); err != nil {
		fmt.Fprintln(stderr, "myriarchd serve:", err)
		return cfg, 2, true
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "myriarchd serve:", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return cfg, 2, true
	}
	return cfg, 0, false
}

func serve(args []string, stdout, stderr io.Writer) int {
	cfg, code, done := serveCommand(args, os.LookupEnv, stdout, stderr)
	if done {
		return code
	}
	log, err := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		fmt.Fprintln(stderr, "myriarchd serve:", err)
		return 2
	}
	o := cfg.Options
	o.Log = log
	switch percent, byDefault, err := applyGCPercent(os.LookupEnv); {
	case err != nil:
		log.Warn("garbage collection at Go's default", "gogc", percent, "err", err)
	case byDefault:
		log.Info("garbage collection at myriarchd's default heap growth; set GOGC to change it", "gogc", percent)
	default:
		log.Info("garbage collection as GOGC sets it", "gogc", percent)
	}
	if cfg.ConfigFile != "" {
		log.Info("configuration read", "file", cfg.ConfigFile)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reload := make(chan struct{}, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()
	if err := server.Run(ctx, o, reload); err != nil {
		fmt.Fprintln(stderr, "myriarchd serve:", err)
		return 1
	}
	return 0
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log format %q: must be text or json", format)
	}
}
