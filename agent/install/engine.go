package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/agent/admission"
	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/pkgstatus"
	"github.com/myriarch/myriarch/agent/verify"
)

// Reporter sends the complete set of package statuses to the server
// (agent/updater's StatusReporter is this type). The engine calls it from
// one goroutine at a time; it should not block for long.
type Reporter func(*protobufs.PackageStatuses) error

// Engine installs offered packages, one transaction at a time, with its
// back-ends.
//
// Call Recover once at start: it replays an interrupted transaction and
// starts the worker. Then HandlePackages for every offer: it never blocks
// on an install; transactions run one at a time, and a newer offer of a
// package replaces one still queued. Close stops the worker and closes the
// back-ends; a transaction cut short by Close is finished or rolled back by
// the next Recover, exactly like after a crash. An Engine is the updater's
// PackageHandler (HandlePackages, LastStatuses).
type Engine struct {
	o     Options
	log   *slog.Logger
	fetch download.Fetcher
	keys  []verify.Key // pinned; see minisignKeys
	// sigstore checks Sigstore bundles (nil: no trust.sigstore policy).
	sigstore *verify.Sigstore
	j        *journal.Journal
	crashAt  string
	order    []*backend          // as given to New
	byName   map[string]*backend // by package name

	// mu guards the fields marked so; helpers that need it held end in
	// Locked.
	mu       sync.Mutex
	statuses map[string]*protobufs.PackageStatus // guarded by mu
	allHash  []byte                              // guarded by mu
	queue    []job                               // guarded by mu
	running  *job                                // guarded by mu; the job the worker runs
	live     *Txn                                // guarded by mu; a replayed gate the worker runs first (LiveGater)
	rep      Reporter                            // guarded by mu
	started  bool                                // guarded by mu; Recover was called
	closed   bool                                // guarded by mu
	cancel   context.CancelFunc                  // guarded by mu; ends the worker
	wake     chan struct{}
	wg       sync.WaitGroup

	// pubMu serialises publishing, so statuses go out in the order they
	// were set.
	pubMu sync.Mutex
}

// backend is a Backend with what the engine keeps about it.
type backend struct {
	Backend
	desc      Description
	installed Installed // guarded by Engine.mu; what runs
}

type job struct {
	b   *backend
	pkg *protobufs.PackageAvailable
}

// New checks opts and returns an engine installing with backends (one per
// package name). It touches nothing that runs and starts nothing until
// Recover.
func New(opts Options, log *slog.Logger, backends ...Backend) (*Engine, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if len(backends) == 0 {
		return nil, errors.New("install: no back-end")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := opts.withDefaults()
	keys, err := verify.ParseKeys(o.MinisignPublicKeys)
	if err != nil {
		return nil, err
	}
	ring, err := verify.ParseKeyring("trust.minisign_keys", o.MinisignKeys)
	if err != nil {
		return nil, err
	}
	keys = append(keys, ring...)
	var sig *verify.Sigstore
	if o.Sigstore != nil {
		if sig, err = verify.NewSigstore(*o.Sigstore); err != nil {
			return nil, fmt.Errorf("trust.sigstore: %w", err)
		}
	}
	if o.Download.Logger == nil {
		o.Download.Logger = log
	}
	f, err := download.New(o.Download)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.StateDir, StagingDir), 0o700); err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	j, err := journal.Open(o.StateDir)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		o: o, log: log, fetch: f, keys: keys, sigstore: sig, j: j, crashAt: os.Getenv(CrashAtEnv),
		byName:   map[string]*backend{},
		statuses: map[string]*protobufs.PackageStatus{},
		rep:      func(*protobufs.PackageStatuses) error { return nil },
		wake:     make(chan struct{}, 1),
	}
	for _, b := range backends {
		if p, ok := b.(Provisioner); ok {
			if err := p.Provision(Env{Options: o, Log: log}); err != nil {
				return nil, err
			}
		}
		d := b.Describe()
		if d.Package == "" || d.Kind == "" {
			return nil, fmt.Errorf("install: back-end %T describes no package or kind", b)
		}
		if e.byName[d.Package] != nil {
			return nil, fmt.Errorf("install: two back-ends install %q", d.Package)
		}
		bk := &backend{Backend: b, desc: d}
		e.order = append(e.order, bk)
		e.byName[d.Package] = bk
	}
	return e, nil
}

// HandlePackages takes one PackagesAvailable without blocking: refused
// packages get InstallFailed at once, the others InstallPending, and the
// worker installs them in turn. Statuses go to report from now on (nil
// keeps the previous reporter). ctx is not used for the installs (they
// run under the context given to Recover).
func (e *Engine) HandlePackages(_ context.Context, offer *protobufs.PackagesAvailable, report Reporter) {
	if offer == nil {
		return
	}
	e.mu.Lock()
	if report != nil {
		e.rep = report
	}
	if offer.GetAllPackagesHash() != nil {
		e.allHash = slices.Clone(offer.GetAllPackagesHash())
	}
	for _, name := range pkgstatus.Names(offer) {
		e.offerLocked(name, offer.GetPackages()[name])
	}
	e.mu.Unlock()
	e.publish(true)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// offerLocked handles one offered package.
func (e *Engine) offerLocked(name string, p *protobufs.PackageAvailable) {
	st := &protobufs.PackageStatus{Name: name, ServerOfferedVersion: p.GetVersion(), ServerOfferedHash: pkgstatus.OfferedHash(p)}
	b := e.byName[name]
	switch {
	case e.running != nil && e.running.b == b && admission.SameHash(e.running.pkg, p):
		return // already being installed
	case !e.started || e.closed:
		e.refuseLocked(st, "the install engine is not running (Recover was not called, or it was closed)")
		return
	case b != nil && e.isInstalledLocked(b, p):
		st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_Installed
		e.setLocked(st)
		return
	}
	b, err := e.admitLocked(name, p)
	if err != nil {
		e.log.Warn("package offer refused", "package", name, "version", p.GetVersion(), "err", err)
		e.refuseLocked(st, err.Error())
		return
	}
	e.queue = slices.DeleteFunc(e.queue, func(j job) bool { return j.b == b })
	e.queue = append(e.queue, job{b: b, pkg: proto.Clone(p).(*protobufs.PackageAvailable)})
	if e.running == nil || e.running.b != b {
		st.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending
		e.setLocked(st)
	}
	e.log.Info("package offer queued", "package", name, "version", p.GetVersion(), "queued", len(e.queue))
}

// isInstalledLocked reports whether p is what b runs: the same content
// hash, or (for a back-end that knows what runs by its version only) the
// same version.
func (e *Engine) isInstalledLocked(b *backend, p *protobufs.PackageAvailable) bool {
	in := b.installed
	if b.desc.ByVersion {
		return in.Version != "" && SameVersion(p.GetVersion(), in.Version)
	}
	return in.Hash != "" && in.Hash == admission.HexHash(p)
}

// worker runs queued jobs one at a time until ctx ends.
func (e *Engine) worker(ctx context.Context) {
	defer e.wg.Done()
	e.mu.Lock()
	t := e.live
	e.live = nil
	e.mu.Unlock()
	if t != nil {
		e.gateAndCommit(ctx, t)
		e.mu.Lock()
		e.running = nil
		e.mu.Unlock()
		e.publish(true)
		if ctx.Err() != nil {
			return // stopping, or restarting into a restored binary
		}
	}
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

		restart := e.run(ctx, jb)

		e.mu.Lock()
		e.running = nil
		if restart {
			// The process is about to exit for the new version: start nothing.
			e.queue = nil
		}
		e.mu.Unlock()
		if ctx.Err() != nil || restart {
			return
		}
	}
}

// Busy reports whether a transaction is running or queued.
func (e *Engine) Busy() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running != nil || len(e.queue) > 0
}

// Close stops the worker, waits for it, and closes the back-ends that hold
// resources (io.Closer). A transaction in progress stops at its next step;
// the journal keeps it for the next Recover.
func (e *Engine) Close() error {
	e.mu.Lock()
	cancel, already := e.cancel, e.closed
	e.closed = true
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	e.wg.Wait()
	if already {
		return nil
	}
	var errs []error
	for _, b := range e.order {
		if c, ok := b.Backend.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
