package container

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"aead.dev/minisign"
	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/agent/admission"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/pkgstatus"
	"github.com/myriarch/myriarch/agent/updater"
	"github.com/myriarch/myriarch/agent/verify"
)

// Engine replaces the collector container, one offer at a time.
//
// Call Recover once at start (it replays an interrupted swap and starts the
// worker), then HandlePackages for every offer. HandlePackages never blocks
// on an install; installs are serialised and a newer offer replaces one
// still queued. Close stops the worker; a swap cut short by Close is
// finished or rolled back by the next Recover, exactly like a crash.
type Engine struct {
	o       Options
	log     *slog.Logger
	docker  *client.Client
	fetch   download.Fetcher
	keys    []minisign.PublicKey
	j       *journal.Journal
	crashAt string
	onStep  func(string) // test observer of crash points

	mu       sync.Mutex
	statuses map[string]*protobufs.PackageStatus
	allHash  []byte
	queued   *protobufs.PackageAvailable
	running  *protobufs.PackageAvailable
	image    *ImageInfo // what <name> runs, nil while unknown
	report   updater.StatusReporter
	wake     chan struct{}
	started  bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	repMu    sync.Mutex
}

var _ updater.PackageHandler = (*Engine)(nil)

// New checks opts, connects a Docker client (API version negotiated on first
// use, so engines from API 1.41 up work) and returns an engine. It touches
// no container until Recover.
func New(opts Options, log *slog.Logger) (*Engine, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := opts.withDefaults()
	keys, err := verify.ParseKeys(o.MinisignPublicKeys)
	if err != nil {
		return nil, err
	}
	if o.Download.Logger == nil {
		o.Download.Logger = log
	}
	f, err := download.New(o.Download)
	if err != nil {
		return nil, err
	}
	copts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if o.DockerHost != "" {
		copts = append(copts, client.WithHost(o.DockerHost))
	}
	dc, err := client.New(copts...)
	if err != nil {
		return nil, fmt.Errorf("container: docker client: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(o.StateDir, stagingDir), 0o700); err != nil {
		return nil, fmt.Errorf("container: %w", err)
	}
	j, err := journal.Open(o.StateDir)
	if err != nil {
		return nil, err
	}
	return &Engine{
		o: o, log: log.With("container", o.Name), docker: dc, fetch: f, keys: keys, j: j,
		crashAt:  os.Getenv(CrashAtEnv),
		statuses: map[string]*protobufs.PackageStatus{},
		report:   func(*protobufs.PackageStatuses) error { return nil },
		wake:     make(chan struct{}, 1),
	}, nil
}

// HandlePackages implements updater.PackageHandler: refused packages get
// InstallFailed at once, the collector package InstallPending, and the
// worker installs it.
func (e *Engine) HandlePackages(ctx context.Context, offer *protobufs.PackagesAvailable, report updater.StatusReporter) {
	if offer == nil {
		return
	}
	e.mu.Lock()
	if report != nil {
		e.report = report
	}
	if offer.GetAllPackagesHash() != nil {
		e.allHash = slices.Clone(offer.GetAllPackagesHash())
	}
	for _, name := range pkgstatus.Names(offer) {
		p := offer.GetPackages()[name]
		st := &protobufs.PackageStatus{Name: name, ServerOfferedVersion: p.GetVersion(), ServerOfferedHash: pkgstatus.OfferedHash(p)}
		if e.running != nil && name == e.o.Package && admission.SameHash(e.running, p) {
			continue // already being installed
		}
		if !e.started {
			e.refuse(st, "the container install engine is not started (Recover was not called)")
			continue
		}
		if name == e.o.Package && e.image != nil && e.image.Hash != "" && e.image.Hash == admission.HexHash(p) {
			st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_Installed
			e.keepAgentHas(st)
			e.statuses[name] = st
			continue
		}
		if _, err := e.admit(name, p); err != nil {
			e.log.Warn("package offer refused", "package", name, "version", p.GetVersion(), "err", err)
			e.refuse(st, err.Error())
			continue
		}
		e.queued = proto.Clone(p).(*protobufs.PackageAvailable)
		st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending
		e.keepAgentHas(st)
		e.statuses[name] = st
		e.log.Info("package offer queued", "package", name, "version", p.GetVersion())
	}
	e.mu.Unlock()
	e.sendStatuses(true)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Image returns what the collector container runs, as last seen by the
// engine (after Recover and after every swap); ok is false while unknown.
func (e *Engine) Image() (ImageInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.image == nil {
		return ImageInfo{}, false
	}
	return *e.image, true
}

// Busy reports whether an install is running or queued.
func (e *Engine) Busy() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running != nil || e.queued != nil
}

// Close stops the worker, waits for it, and closes the Docker client. A swap
// in progress stops at its next step; the journal keeps it for Recover.
func (e *Engine) Close() error {
	e.mu.Lock()
	cancel := e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	e.wg.Wait()
	return e.docker.Close()
}

func (e *Engine) worker(ctx context.Context) {
	defer e.wg.Done()
	for {
		e.mu.Lock()
		p := e.queued
		e.queued = nil
		e.running = p
		e.mu.Unlock()
		if p == nil {
			select {
			case <-ctx.Done():
				return
			case <-e.wake:
				continue
			}
		}
		e.install(ctx, p)
		e.mu.Lock()
		e.running = nil
		e.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}

func (e *Engine) refuse(st *protobufs.PackageStatus, msg string) {
	st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
	st.ErrorMessage = msg
	e.keepAgentHas(st)
	e.statuses[st.Name] = st
}

// keepAgentHas fills what the container runs now. Called with e.mu held.
func (e *Engine) keepAgentHas(st *protobufs.PackageStatus) {
	if st.Name == e.o.Package && e.image != nil {
		st.AgentHasVersion = e.image.Version
		st.AgentHasHash = unhex(e.image.Hash)
	}
}

// setStatus replaces one package's status and reports the whole set.
func (e *Engine) setStatus(st *protobufs.PackageStatus, persist bool) {
	e.mu.Lock()
	e.keepAgentHas(st)
	e.statuses[st.Name] = st
	e.mu.Unlock()
	e.sendStatuses(persist)
}

func (e *Engine) sendStatuses(persist bool) {
	e.repMu.Lock()
	defer e.repMu.Unlock()
	e.mu.Lock()
	s := pkgstatus.Snapshot(e.statuses, e.allHash)
	rep := e.report
	e.mu.Unlock()
	pkgstatus.Publish(e.log, s, rep, e.statePath(statusesFile), persist)
}

func (e *Engine) setImage(img *ImageInfo) {
	e.mu.Lock()
	e.image = img
	e.mu.Unlock()
}
