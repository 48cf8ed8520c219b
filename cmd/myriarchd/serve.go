package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/myriarch/myriarch/server"
)

func serve(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o server.Options
	var logFormat, logLevel string
	fs.StringVar(&o.DataDir, "data-dir", "/var/lib/myriarchd", "state directory (SQLite database, admin token)")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:4320", "OpAMP listen address (path /v1/opamp)")
	fs.StringVar(&o.AdminListen, "admin-listen", "127.0.0.1:4321", "admin API listen address")
	fs.StringVar(&o.Estate, "estate", "", "estate directory (inventory, fleets, packages)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "TLS certificate for the OpAMP listener")
	fs.StringVar(&o.TLSKey, "tls-key", "", "TLS key for the OpAMP listener")
	fs.StringVar(&o.ClientCA, "client-ca", "", "CA bundle for client certificates (mutual TLS)")
	fs.StringVar(&o.AdminTokenFile, "admin-token-file", "", "admin token file (default <data-dir>/admin.token, generated)")
	fs.StringVar(&o.PublicURL, "public-url", "", "base URL agents reach the OpAMP listener at (for artifact URLs; default from --listen)")
	fs.DurationVar(&o.Heartbeat, "heartbeat", 30*time.Second, "heartbeat interval offered to agents")
	fs.StringVar(&logFormat, "log-format", "text", "text or json")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log, err := newLogger(stderr, logFormat, logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "myriarchd serve:", err)
		return 2
	}
	o.Log = log
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
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: must be text or json", format)
	}
}
