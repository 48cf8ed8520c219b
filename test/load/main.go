//go:build linux

// Command load simulates N OpAMP agents (N/2 hosts, each a collector as the
// upstream Supervisor reports it and its myriarch-updater) against a
// myriarchd process it starts on loopback, runs the scenarios (ramp, steady
// state, reconnect storm, rollout, churn) and prints what it measured. It is
// bounded: every phase has a time limit and the whole run stops by itself
// after -deadline.
//
//	go run ./test/load -n 10000
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

type config struct {
	agents            int
	hosts             int
	scenarios         string
	heartbeat         time.Duration
	readTimeout       time.Duration
	steady            time.Duration
	churn             time.Duration
	churnPerMin       float64
	rampRate          int
	installStep       time.Duration
	phaseTimeout      time.Duration
	deadline          time.Duration
	dialConcurrency   int
	sourceAddrs       int
	backoffBase       time.Duration
	backoffCap        time.Duration
	bin               string
	store             string // myriarchd --store
	instances         int
	postgresPID       int
	logLevel          string // myriarchd --log-level
	workers           int
	seed              uint64
	workerHosts       string // worker process only
	servers           string // worker process only
	token             string // worker process only
	work              string
	fromVersion       string
	toVersion         string
	force             bool
	transport         string
	reconnectFraction float64
	tlsResume         bool
	serverEnv         string
	httpWorkers       int
	profileDir        string
}

func main() {
	var c config
	flag.IntVar(&c.agents, "n", 10000, "number of OpAMP agents (N/2 hosts, each a collector and an updater)")
	flag.StringVar(&c.scenarios, "scenarios", "ramp,steady,storm,rollout,churn", "phases to run, in this order (ramp always runs; reconnect: -reconnect-fraction of the agents' sockets closed at once); with -instances ≥ 2 also kill (SIGKILL the leader in steady state, then start it again) and rollout-kill (SIGKILL the leader a quarter into a rollout)")
	flag.DurationVar(&c.heartbeat, "heartbeat", 30*time.Second, "heartbeat interval (given to myriarchd and used by the agents)")
	flag.DurationVar(&c.steady, "steady", 2*time.Minute, "steady-state measurement window")
	flag.DurationVar(&c.churn, "churn", 2*time.Minute, "churn phase length")
	flag.Float64Var(&c.churnPerMin, "churn-rate", 0.01, "fraction of agents reconnecting per minute during churn")
	flag.BoolVar(&c.tlsResume, "tls-resume", false, "wss: agents keep TLS session tickets and resume with them when they reconnect")
	flag.Float64Var(&c.reconnectFraction, "reconnect-fraction", 0.5, "reconnect phase: fraction of the agents whose sockets close at once")
	flag.IntVar(&c.rampRate, "ramp-rate", 0, "new connections per second during the ramp (0: as fast as -dial-concurrency allows)")
	flag.DurationVar(&c.installStep, "install-step", time.Second, "mean simulated time of each of Downloading, Installing, Installed")
	flag.DurationVar(&c.phaseTimeout, "phase-timeout", 10*time.Minute, "longest any phase may take")
	flag.DurationVar(&c.deadline, "deadline", 45*time.Minute, "the whole run stops after this")
	flag.IntVar(&c.dialConcurrency, "dial-concurrency", 256, "connection attempts in flight at once")
	flag.IntVar(&c.sourceAddrs, "source-addrs", 64, "loopback source addresses to spread connections over (127.1.x.y): the kernel finds a free port on an address in a time that grows with the sockets already open from it")
	flag.DurationVar(&c.backoffBase, "backoff", time.Second, "reconnect backoff base (jittered, doubling)")
	flag.DurationVar(&c.backoffCap, "backoff-cap", 30*time.Second, "reconnect backoff cap")
	flag.StringVar(&c.store, "store", "", "myriarchd --store (default: SQLite in the work directory), e.g. a postgres:// URL")
	flag.IntVar(&c.instances, "instances", 1, "myriarchd instances sharing -store (a PostgreSQL URL when more than 1); agents are spread over them")
	flag.StringVar(&c.logLevel, "log-level", "warn", "myriarchd --log-level (debug, info, warn, error); logs are kept in -work")
	flag.IntVar(&c.postgresPID, "postgres-pid", 0, "PID of the PostgreSQL postmaster behind -store, to report its memory (PSS) and CPU")
	flag.IntVar(&c.workers, "workers", 1, "processes simulating the agents (each holds one socket per agent, so more than RLIMIT_NOFILE agents need several)")
	flag.Uint64Var(&c.seed, "seed", 0, "seed of the agents' instance UIDs (default: the time)")
	flag.StringVar(&c.workerHosts, "worker-hosts", "", "worker process: simulate hosts LO:HI (set by the main process)")
	flag.StringVar(&c.servers, "servers", "", "worker process: the OpAMP URLs, comma-separated")
	flag.StringVar(&c.token, "token", "", "worker process: the enrollment token")
	flag.StringVar(&c.bin, "myriarchd", "", "myriarchd binary (default: built from this module)")
	flag.StringVar(&c.work, "work", "", "work directory (default: a new temporary directory, removed afterwards)")
	flag.StringVar(&c.fromVersion, "from", "0.149.0", "collector version at the start")
	flag.StringVar(&c.toVersion, "to", "0.149.1", "version the rollout moves to")
	flag.StringVar(&c.transport, "transport", "ws", "ws (one WebSocket per agent), wss (the same over TLS, self-signed for 127.0.0.1) or http (plain-HTTP polling every heartbeat)")
	flag.IntVar(&c.httpWorkers, "http-workers", 64, "plain HTTP: requests in flight at once")
	flag.StringVar(&c.serverEnv, "server-env", "", "comma-separated VAR=value added to myriarchd's environment (e.g. GOGC=50)")
	flag.StringVar(&c.profileDir, "profile", "", "save myriarchd's heap profile at every memory sample into this directory (go tool pprof)")
	flag.BoolVar(&c.force, "force", false, "run even if the file-descriptor limit cannot hold N connections")
	flag.Parse()
	if c.workerHosts != "" {
		c.hosts = c.agents / 2
		c.readTimeout = 3*c.heartbeat + 10*time.Second
		if err := runWorker(c, c.workerHosts, c.servers, c.token, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "load worker:", err)
			os.Exit(1)
		}
		return
	}
	if c.seed == 0 {
		c.seed = uint64(time.Now().UnixNano())
	}
	if err := c.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	c.hosts = c.agents / 2
	c.readTimeout = 3*c.heartbeat + 10*time.Second
	if err := run(c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func (c *config) validate() error {
	var errs []error
	if c.agents < 2 || c.agents%2 != 0 {
		errs = append(errs, fmt.Errorf("-n %d: must be an even number ≥ 2 (a collector and an updater per host)", c.agents))
	}
	if c.heartbeat < time.Second {
		errs = append(errs, fmt.Errorf("-heartbeat %s: at least 1s", c.heartbeat))
	}
	if c.dialConcurrency < 1 || c.sourceAddrs < 1 || c.sourceAddrs > 60000 {
		errs = append(errs, errors.New("-dial-concurrency and -source-addrs must be ≥ 1 (source-addrs ≤ 60000)"))
	}
	if c.transport != "ws" && c.transport != "wss" && c.transport != "http" {
		errs = append(errs, fmt.Errorf("-transport %q: ws, wss or http", c.transport))
	}
	if c.churnPerMin < 0 || c.churnPerMin > 1 {
		errs = append(errs, fmt.Errorf("-churn-rate %g: a fraction in [0,1]", c.churnPerMin))
	}
	if c.reconnectFraction <= 0 || c.reconnectFraction > 1 {
		errs = append(errs, fmt.Errorf("-reconnect-fraction %g: a fraction in (0,1]", c.reconnectFraction))
	}
	if c.workers < 1 || (c.workers > 1 && c.transport != "ws") {
		errs = append(errs, fmt.Errorf("-workers %d: at least 1; several only with -transport ws", c.workers))
	}
	if c.instances < 1 || (c.instances > 1 && !strings.HasPrefix(c.store, "postgres")) {
		errs = append(errs, fmt.Errorf("-instances %d: at least 1, and more than 1 share a -store postgres://… URL", c.instances))
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.logLevel) {
		errs = append(errs, fmt.Errorf("-log-level %q: debug, info, warn or error", c.logLevel))
	}
	for _, s := range strings.Split(c.scenarios, ",") {
		switch s {
		case "ramp", "steady", "storm", "reconnect", "rollout", "churn", "kill", "rollout-kill":
		default:
			errs = append(errs, fmt.Errorf("-scenarios: unknown phase %q", s))
		}
	}
	return errors.Join(errs...)
}

// raiseNoFile lifts the soft RLIMIT_NOFILE to the hard limit and returns it.
func raiseNoFile() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	return rl.Max, nil
}

func run(c config, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	limit, err := raiseNoFile()
	if err != nil {
		return fmt.Errorf("raise RLIMIT_NOFILE: %w", err)
	}
	// Both this process and myriarchd hold one descriptor per agent.
	// Each agent process holds one descriptor per agent it simulates.
	if need := uint64(c.agents/c.workers) + 200; c.transport != "http" && need > limit && !c.force {
		return fmt.Errorf("%d agents need ≈%d file descriptors in this process and in myriarchd, but the hard RLIMIT_NOFILE is %d "+
			"(raising it needs CAP_SYS_RESOURCE); use -force to try anyway", c.agents, need, limit)
	}
	work := c.work
	if work == "" {
		if work, err = os.MkdirTemp("", "myriarch-load-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	if c.bin == "" {
		c.bin = filepath.Join(work, "myriarchd")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", c.bin, "./cmd/myriarchd")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/myriarchd: %w\n%s", err, b)
		}
	}
	estate := filepath.Join(work, "estate")
	if err := writeEstate(estate, []string{c.fromVersion, c.toVersion}, c.fromVersion); err != nil {
		return err
	}
	scheme := "ws://"
	var clientTLS *tls.Config
	var tlsCert, tlsKey string
	if c.transport == "wss" {
		if tlsCert, tlsKey, clientTLS, err = writeServerCert(work); err != nil {
			return fmt.Errorf("TLS certificate: %w", err)
		}
		if c.tlsResume {
			// One cache for all: its entry is the server's, so every agent
			// resumes with the newest ticket.
			clientTLS.ClientSessionCache = tls.NewLRUClientSessionCache(16)
		}
		scheme = "wss://"
	}
	// One myriarchd, or several on one PostgreSQL store (the first migrates
	// it; the others find it migrated).
	var srvs []*server
	var urls []string
	defer func() {
		for _, s := range srvs {
			s.stop()
		}
	}()
	for i := range c.instances {
		opampAddr, adminAddr, err := freeAddrs()
		if err != nil {
			return err
		}
		name := "myriarchd"
		if c.instances > 1 {
			name = fmt.Sprintf("myriarchd-%d", i)
		}
		srv := &server{bin: c.bin, dataDir: filepath.Join(work, "data-"+name), estate: estate, logPath: filepath.Join(work, name+".log"),
			opampAddr: opampAddr, adminAddr: adminAddr, heartbeat: c.heartbeat, store: c.store, tlsCert: tlsCert, tlsKey: tlsKey, logLevel: c.logLevel}
		if c.serverEnv != "" {
			srv.env = strings.Split(c.serverEnv, ",")
		}
		if err := srv.start(); err != nil {
			return err
		}
		srvs = append(srvs, srv)
		urls = append(urls, scheme+opampAddr+"/v1/opamp")
	}
	srv := srvs[0]
	var tok struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if code, err := srv.api("POST", "/api/v1/tokens", map[string]any{"name": "load", "labels": map[string]string{"channel": "stable"}}, &tok); err != nil || code != 201 {
		return fmt.Errorf("create token: %d %v", code, err)
	}
	// The other instances learn of the token from the store.
	for _, s := range srvs[1:] {
		known := waitFor(ctx, time.Minute, func() bool {
			var list struct {
				Tokens []struct {
					ID string `json:"id"`
				} `json:"tokens"`
			}
			if code, err := s.api("GET", "/api/v1/tokens", nil, &list); err != nil || code != 200 {
				return false
			}
			for _, t := range list.Tokens {
				if t.ID == tok.ID {
					return true
				}
			}
			return false
		})
		if !known {
			return fmt.Errorf("instance %s never learnt of the token created on %s", s.adminAddr, srv.adminAddr)
		}
	}
	r := &runner{c: c, srv: srv, srvs: srvs, out: out, sim: newSim(c, urls, tok.Token, clientTLS)}
	r.reportf("# myriarch load: %d agents (%d hosts) over %s, heartbeat %s, fd limit %d, myriarchd env %q, %d instance(s), store %s, %s\n",
		c.agents, c.hosts, c.transport, c.heartbeat, limit, c.serverEnv, c.instances, storeName(c.store), time.Now().UTC().Format(time.RFC3339))
	defer r.sim.closeAll()
	if c.workers > 1 {
		if err := r.startWorkers(urls, tok.Token); err != nil {
			return err
		}
		defer r.stopWorkers()
	} else {
		hbCtx, hbStop := context.WithCancel(ctx)
		defer hbStop()
		go r.sim.heartbeats(hbCtx)
	}
	if err := r.ramp(ctx); err != nil {
		return err
	}
	for _, phase := range strings.Split(c.scenarios, ",") {
		var err error
		switch phase {
		case "steady":
			err = r.steady(ctx)
		case "storm":
			err = r.storm(ctx)
		case "rollout":
			err = r.rollout(ctx, false)
		case "rollout-kill":
			err = r.rollout(ctx, true)
		case "kill":
			err = r.kill(ctx)
		case "churn":
			err = r.churnPhase(ctx)
		case "reconnect":
			err = r.reconnectPhase(ctx)
		}
		if err != nil {
			r.reportf("phase %s: %v\n", phase, err)
			r.failed = true
		}
	}
	r.final(ctx)
	if r.failed {
		return errors.New("a phase failed or something was lost (see above)")
	}
	return nil
}

// storeName is -store for the report, without a password.
func storeName(s string) string {
	if s == "" {
		return "sqlite"
	}
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "postgres"
}
