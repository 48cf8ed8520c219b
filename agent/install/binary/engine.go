package binary

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"aead.dev/minisign"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/agent/admission"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/install/selfupdate"
	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/pkgstatus"
	"github.com/myriarch/myriarch/agent/verify"
)

// Engine installs offered packages one at a time.
//
// Call Recover once at start (it replays an interrupted transaction and
// starts the worker), then Offer for every PackagesAvailable. Offer never
// blocks on an install; offers are serialised (never two installs at once)
// and a newer offer for a package replaces one still queued. Close stops the
// worker; an install cut short by Close is finished or rolled back by the
// next Recover, exactly like a crash.
type Engine struct {
	o       Options
	ctl     Controller
	rep     Reporter
	log     *slog.Logger
	fetch   download.Fetcher
	keys    []minisign.PublicKey
	j       *journal.Journal
	self    *selfupdate.Updater
	crashAt string
	onStep  func(string) // test observer of crash points

	mu       sync.Mutex
	statuses map[string]*protobufs.PackageStatus
	allHash  []byte
	queue    []job
	running  *job
	inst     *installed
	wake     chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	repMu    sync.Mutex
}

type job struct {
	name string
	pkg  *protobufs.PackageAvailable
	self bool
}

// New checks opts and returns an engine. It touches no process and starts
// nothing until Recover. rep may be nil (statuses are then only persisted,
// for LastStatuses) and replaced later with SetReporter.
func New(opts Options, ctl Controller, rep Reporter, log *slog.Logger) (*Engine, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if ctl == nil {
		return nil, errors.New("install: a Controller is required")
	}
	if rep == nil {
		rep = ReporterFunc(func(*protobufs.PackageStatuses) error { return nil })
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
	for _, d := range []string{o.StateDir, filepath.Join(o.StateDir, stagingDir), filepath.Join(o.Root, "versions")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
	}
	j, err := journal.Open(o.StateDir)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		o: o, ctl: ctl, rep: rep, log: log, fetch: f, keys: keys, j: j,
		crashAt:  os.Getenv(CrashAtEnv),
		statuses: map[string]*protobufs.PackageStatus{},
		wake:     make(chan struct{}, 1),
	}
	if o.RequestRestart != nil {
		if e.self, err = selfupdate.New(o.UpdaterExecutable, o.StateDir); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Offer handles one PackagesAvailable message without blocking: refused
// packages get InstallFailed at once, accepted ones InstallPending, and the
// worker installs them in turn. ctx is not used for the install itself (it
// runs under the context given to Recover).
func (e *Engine) Offer(ctx context.Context, offer *protobufs.PackagesAvailable) {
	if offer == nil {
		return
	}
	e.mu.Lock()
	if offer.GetAllPackagesHash() != nil {
		e.allHash = slices.Clone(offer.GetAllPackagesHash())
	}
	for _, name := range pkgstatus.Names(offer) {
		p := offer.GetPackages()[name]
		st := &protobufs.PackageStatus{Name: name, ServerOfferedVersion: p.GetVersion(), ServerOfferedHash: pkgstatus.OfferedHash(p)}
		if e.running != nil && e.running.name == name && admission.SameHash(e.running.pkg, p) {
			continue // already being installed
		}
		if e.ctx == nil || e.ctx.Err() != nil {
			e.refuse(st, "the install engine is not running (Recover not called, or closed)")
			continue
		}
		if name == e.o.Package && e.inst != nil && e.inst.Hash != "" && e.inst.Hash == admission.HexHash(p) {
			st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_Installed
			st.AgentHasVersion, st.AgentHasHash = e.inst.Version, p.GetFile().GetContentHash()
			e.statuses[name] = st
			continue
		}
		// The running updater's own hash is unknown: its version decides.
		if name == SelfPackage && e.o.UpdaterVersion != "" && sameVersion(p.GetVersion(), e.o.UpdaterVersion) {
			st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_Installed
			st.AgentHasVersion = e.o.UpdaterVersion
			if prev := e.statuses[name]; prev != nil && prev.Status == st.Status {
				st.AgentHasHash = prev.AgentHasHash
			}
			e.statuses[name] = st
			continue
		}
		self, err := e.admit(name, p)
		if err != nil {
			e.log.Warn("package offer refused", "package", name, "version", p.GetVersion(), "err", err)
			e.refuse(st, err.Error())
			continue
		}
		e.queue = slices.DeleteFunc(e.queue, func(j job) bool { return j.name == name })
		e.queue = append(e.queue, job{name: name, pkg: proto.Clone(p).(*protobufs.PackageAvailable), self: self})
		if e.running == nil || e.running.name != name {
			st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending
			e.keepAgentHas(st)
			e.statuses[name] = st
		}
		e.log.Info("package offer queued", "package", name, "version", p.GetVersion(), "queued", len(e.queue))
	}
	e.mu.Unlock()
	e.report(true)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Engine) refuse(st *protobufs.PackageStatus, msg string) {
	st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
	st.ErrorMessage = msg
	e.keepAgentHas(st)
	e.statuses[st.Name] = st
}

// keepAgentHas fills what the agent runs now (collector package only).
func (e *Engine) keepAgentHas(st *protobufs.PackageStatus) {
	if st.Name == e.o.Package && e.inst != nil {
		st.AgentHasVersion = e.inst.Version
		st.AgentHasHash = unhex(e.inst.Hash)
	}
	if st.Name == SelfPackage {
		st.AgentHasVersion = e.o.UpdaterVersion
	}
}

// worker runs queued jobs one at a time until ctx ends.
func (e *Engine) worker(ctx context.Context) {
	defer e.wg.Done()
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-e.wake:
				continue
			}
		}
		jb := e.queue[0]
		e.queue = e.queue[1:]
		e.running = &jb
		e.mu.Unlock()

		restart := false
		if jb.self {
			restart = e.runSelf(ctx, jb)
		} else {
			e.runCollector(ctx, jb)
		}

		e.mu.Lock()
		e.running = nil
		if restart {
			// The process is about to exit for the new binary: start nothing.
			e.queue = nil
		}
		e.mu.Unlock()
		if ctx.Err() != nil || restart {
			return
		}
	}
}

// Close stops the worker and waits for it. An install in progress stops at
// its next step; the journal keeps it for the next Recover.
func (e *Engine) Close() error {
	e.mu.Lock()
	cancel := e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	e.wg.Wait()
	return nil
}

// Busy reports whether an install is running or queued.
func (e *Engine) Busy() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running != nil || len(e.queue) > 0
}

// setStatus replaces one package's status and reports the whole set.
func (e *Engine) setStatus(st *protobufs.PackageStatus, persist bool) {
	e.mu.Lock()
	e.keepAgentHas(st)
	e.statuses[st.Name] = st
	e.mu.Unlock()
	e.report(persist)
}

// SetReporter replaces where statuses go (the updater passes its reporter
// with every offer).
func (e *Engine) SetReporter(rep Reporter) {
	if rep == nil {
		return
	}
	e.repMu.Lock()
	e.rep = rep
	e.repMu.Unlock()
}

func (e *Engine) report(persist bool) {
	e.repMu.Lock()
	defer e.repMu.Unlock()
	e.mu.Lock()
	s := pkgstatus.Snapshot(e.statuses, e.allHash)
	e.mu.Unlock()
	pkgstatus.Publish(e.log, s, e.rep.SetPackageStatuses, e.statePath(statusesFile), persist)
}
