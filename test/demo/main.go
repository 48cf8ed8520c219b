// Command demo shows myriarch end to end on one machine: a myriarchd server
// on an embedded SQLite store, an enrollment token, a site with the real
// upstream OpAMP Supervisor running a real collector (0.149.0-m.1) under a
// real myriarch-updater, pairing, then a fleet change that upgrades the
// collector to 0.149.0-m.2 — verified, health-gated, with the same instance
// UID — and then a configuration rollout: the fleet names a Blueprint that
// myriarchd renders with the collector's site and sends as remote
// configuration, and a log record sent to the collector arrives under the
// site's id.
//
// Everything lives under ./.myriarch and listens on 127.0.0.1 only.
// Run with `make demo`; set DEMO_LINGER=10m to keep it running afterwards.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/test/e2e/site"
	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, a ...any) { fmt.Printf("==> "+format+"\n", a...) }

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	base, err := filepath.Abs(".myriarch")
	if err != nil {
		return err
	}
	os.RemoveAll(base)
	for _, d := range []string{"bin", "server", "estate/fleets", "estate/packages", "estate/artifacts", "logs"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			return err
		}
	}

	step("building the upstream OpAMP Supervisor v0.149.0 and test collectors (first run: a few minutes; then cached)")
	peers, err := peerbuild.Ensure(ctx, slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		return err
	}
	step("building myriarchd and myriarch-updater")
	bins, err := site.BuildBins(ctx, filepath.Join(base, "bin"), "0.1.0-demo")
	if err != nil {
		return err
	}

	step("signing the collector releases with a fresh minisign key and publishing them in the estate")
	pub, key, err := minisign.GenerateKey(nil)
	if err != nil {
		return err
	}
	estate := filepath.Join(base, "estate")
	for _, v := range []string{peerbuild.VersionM1, peerbuild.VersionM2} {
		c, err := peers.Collector(v)
		if err != nil {
			return err
		}
		if err := site.Publish(estate, c, key); err != nil {
			return err
		}
	}

	step("starting myriarchd (SQLite in %s)", filepath.Join(base, "server"))
	srv, err := site.StartServer(bins.Myriarchd, filepath.Join(base, "server"), estate, filepath.Join(base, "logs", "myriarchd.log"), "", "")
	if err != nil {
		return err
	}
	defer srv.Stop()
	watch := fmt.Sprintf("%s agents list --admin http://%s --data-dir %s", bins.Myriarchd, srv.AdminAddr, filepath.Join(base, "server"))
	fmt.Printf("\n    OpAMP:     %s\n    Admin API: http://%s (bearer token in %s)\n    Watch:     %s\n",
		srv.OpAMPURL(), srv.AdminAddr, filepath.Join(base, "server", "admin.token"), watch)
	printConsole(srv)

	_, token, err := srv.CreateToken("demo-site", map[string]string{"wave": "1"})
	if err != nil {
		return err
	}
	step("created enrollment token demo-site (labels wave=1)")

	pubText, _ := pub.MarshalText()
	s, err := site.New(filepath.Join(base, "host"), site.Options{
		Peers: peers, Initial: peerbuild.VersionM1, ServerURL: srv.OpAMPURL(), Token: token,
		Attributes:     map[string]string{"site.type": "edge", "site.id": "007", "site.name": "Demo edge site", "site.country": "NL", "site.timezone": "Europe/Amsterdam", "deployment.environment.name": "demo"},
		MinisignPubKey: string(pubText), HealthWindow: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	step("site laid out in %s; starting myriarch-updater (it runs the supervisor, which runs collector %s)", s.Root, peerbuild.VersionM1)
	upd, err := s.StartUpdater(bins.Updater, nil)
	if err != nil {
		return err
	}
	defer upd.Stop(20 * time.Second)
	colUID, err := s.WaitCollectorUID(90 * time.Second)
	if err != nil {
		return err
	}
	if _, err := srv.WaitAgent(colUID, 90*time.Second, func(a site.Agent) bool { return a.Pairing.State == "linked" }); err != nil {
		return fmt.Errorf("pairing: %w", err)
	}
	step("collector %s and its updater are paired:", colUID)
	printAgents(srv)

	step("fleet edge: targetVersion %s for site.type=edge", peerbuild.VersionM2)
	start := time.Now()
	if err := site.SetFleet(estate, "edge", peerbuild.VersionM2, map[string]string{"site.type": "edge"}); err != nil {
		return err
	}
	if err := srv.Reload(); err != nil {
		return err
	}
	last := ""
	a, err := srv.WaitAgent(colUID, 5*time.Minute, func(a site.Agent) bool {
		if st := a.OfferState(); st != last {
			fmt.Printf("    %6.1fs  offer %s\n", time.Since(start).Seconds(), st)
			last = st
		}
		return a.Identifying["service.version"] == peerbuild.VersionM2 && a.OfferState() == "up_to_date"
	})
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	step("upgraded in %.1fs: collector %s now reports service.version %s (same instance UID)", time.Since(start).Seconds(), a.InstanceUID, a.Identifying["service.version"])
	printAgents(srv)

	if err := configure(srv, estate, base, colUID, bins.Telecraft); err != nil {
		return err
	}

	if d, err := time.ParseDuration(os.Getenv("DEMO_LINGER")); err == nil && d > 0 {
		step("keeping everything running for %s (Ctrl-C to stop); try: %s", d, watch)
		printConsole(srv)
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	step("stopping; logs and state are in %s", base)
	return nil
}

// configure gives the fleet the Blueprint data-flow/gateway and shows the
// configuration rolling out and data flowing through it.
func configure(srv *site.Server, estate, base, colUID, telecraft string) error {
	sink, err := site.StartSink(filepath.Join(base, "sink"))
	if err != nil {
		return err
	}
	otlpAddr, err := site.FreeAddr()
	if err != nil {
		return err
	}
	step("fleet edge: config.blueprint data-flow/gateway (OTLP/HTTP on %s → batch → OTLP/HTTP to http://%s/sites/${site.id})", otlpAddr, sink.Addr)
	if err := site.WriteGatewayBlueprint(estate, otlpAddr, "otlphttp", sink.Addr); err != nil {
		return err
	}
	if err := site.SetFleet(estate, "edge", peerbuild.VersionM2, map[string]string{"site.type": "edge"}, site.GatewayConfig); err != nil {
		return err
	}
	start := time.Now()
	if err := srv.Reload(); err != nil {
		return err
	}
	last := ""
	a, err := srv.WaitAgent(colUID, 3*time.Minute, func(a site.Agent) bool {
		if st := a.Assignment.SyncState; st != last {
			fmt.Printf("    %6.1fs  config %s\n", time.Since(start).Seconds(), st)
			last = st
		}
		return a.Assignment.SyncState == "in_sync"
	})
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	step("configuration %.12s (revision %.20s…) applied in %.1fs; the server rendered it with site.id=%s",
		site.Str(a.Assignment.Assigned), site.Str(a.Assignment.Revision), time.Since(start).Seconds(), a.Attributes["site.id"])
	if err := site.SendLog(otlpAddr, "hello from the demo"); err != nil {
		return fmt.Errorf("sending a log record to the collector: %w", err)
	}
	for deadline := time.Now().Add(30 * time.Second); !sink.Has(a.Attributes["site.id"], "hello from the demo"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the log record did not reach the sink")
		}
	}
	step("a log record sent to the collector arrived in %s", filepath.Join(sink.Dir, a.Attributes["site.id"]+".otlp"))
	fmt.Printf("    Preview:   %s render --root %s data-flow/gateway --context-from-agent %s --admin http://%s (MYRIARCH_ADMIN_TOKEN from %s)\n",
		telecraft, estate, colUID, srv.AdminAddr, filepath.Join(base, "server", "admin.token"))
	printAgents(srv)
	return nil
}

// printConsole prints the browser console's URL and a one-time login link
// (its secret in the fragment; valid 15 minutes, for one login).
func printConsole(srv *site.Server) {
	var link struct{ Path string }
	if code, err := srv.API("POST", "/api/v1/console/links", nil, &link); err != nil || code != 201 {
		fmt.Printf("    Console:   http://%s/ (no login link: %d %v)\n\n", srv.AdminAddr, code, err)
		return
	}
	fmt.Printf("    Console:   http://%s/\n    Log in:    http://%s%s (one-time link, 15 minutes)\n\n", srv.AdminAddr, srv.AdminAddr, link.Path)
}

func printAgents(srv *site.Server) {
	list, err := srv.Agents("")
	if err != nil {
		fmt.Println("    (agents:", err, ")")
		return
	}
	fmt.Printf("    %-36s  %-9s  %-6s  %-18s  %-8s  %-12s  %s\n", "INSTANCE UID", "KIND", "ONLINE", "SERVICE.VERSION", "PAIRING", "OFFER", "SYNC")
	for _, a := range list {
		sync := a.Assignment.SyncState
		if a.Kind != "collector" {
			sync = "-"
		}
		fmt.Printf("    %-36s  %-9s  %-6v  %-18s  %-8s  %-12s  %s\n", a.InstanceUID, a.Kind, a.Online, a.Identifying["service.version"], a.Pairing.State, a.OfferState(), sync)
	}
}
