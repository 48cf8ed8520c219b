package peerbuild

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// builder performs a build in dir, which the caller has locked.
type builder struct {
	dir string
	in  inputs
	log *slog.Logger
	g   goTool
}

func (b *builder) build(ctx context.Context) (*Peers, error) {
	start := time.Now()
	logPath := filepath.Join(b.dir, "build.log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open build log: %w", err)
	}
	defer lf.Close()
	b.g.log = lf
	b.log.Info("peers: building the OpAMP Supervisor and collectors (cold: several minutes; cached afterwards)",
		"dir", b.dir, "go", b.in.GoVersion, "log", logPath)

	for _, d := range []string{"tools", "src", "bin", "collectors", "artifacts"} {
		if err := os.MkdirAll(filepath.Join(b.dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	ocb, err := b.step(ctx, "collector builder (ocb) "+BuilderVersion, b.buildOCB)
	if err != nil {
		return nil, err
	}
	sup, err := b.step(ctx, "opampsupervisor "+SupervisorVersion, b.buildSupervisor)
	if err != nil {
		return nil, err
	}
	p := &Peers{Dir: b.dir, GOOS: b.in.GOOS, Supervisor: sup, SupervisorVersion: SupervisorVersion}
	for _, spec := range b.in.Specs {
		c, err := b.buildCollector(ctx, ocb, spec)
		if err != nil {
			return nil, err
		}
		p.Collectors = append(p.Collectors, c)
	}
	if err := writeRecord(b.dir, p); err != nil {
		return nil, err
	}
	b.log.Info("peers: ready", "dir", b.dir, "took", time.Since(start).Round(time.Second))
	return p, nil
}

// step runs one build step that yields a file, skipping it when the file is
// already there (an earlier, interrupted build made it).
func (b *builder) step(ctx context.Context, what string, fn func(context.Context) (string, error)) (string, error) {
	start := time.Now()
	b.log.Info("peers: building " + what)
	stop := b.heartbeat(what, start)
	out, err := fn(ctx)
	stop()
	if err != nil {
		return "", fmt.Errorf("build %s: %w", what, err)
	}
	b.log.Info("peers: built "+what, "path", out, "took", time.Since(start).Round(100*time.Millisecond))
	return out, nil
}

// heartbeatEvery spaces the "still building" messages of long steps.
const heartbeatEvery = time.Minute

// heartbeat logs that a step is still running, so a cold build (many minutes
// on a loaded machine) never looks hung. The returned func stops it.
func (b *builder) heartbeat(what string, start time.Time) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				b.log.Info("peers: still building "+what, "elapsed", time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done) }
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// buildOCB installs the collector builder into tools/.
func (b *builder) buildOCB(ctx context.Context) (string, error) {
	tools := filepath.Join(b.dir, "tools")
	bin := filepath.Join(tools, "builder")
	if exists(bin) {
		return bin, nil
	}
	if err := b.g.host().run(ctx, b.dir, []string{"GOBIN=" + tools}, b.g.goBin, "install", builderPackage+"@"+BuilderVersion); err != nil {
		return "", err
	}
	return bin, nil
}

// supervisorGoMod starts the wrapper module: `go install pkg@version` is
// refused because the supervisor's go.mod has replace directives, but a
// module that requires it can build it.
const supervisorGoMod = "module example.com/myriarch/supervisorwrap\n\ngo 1.24\n"

// supervisorBuildFlags are the `go build` flags of the supervisor.
var supervisorBuildFlags = []string{"-trimpath", "-ldflags=-s -w"}

// buildSupervisor builds the upstream supervisor through a wrapper module in
// src/supervisor.
func (b *builder) buildSupervisor(ctx context.Context) (string, error) {
	out := filepath.Join(b.dir, "bin", ExeName(b.in.GOOS, SupervisorExecutable))
	if exists(out) {
		return out, nil
	}
	mod := filepath.Join(b.dir, "src", "supervisor")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(supervisorGoMod), 0o644); err != nil {
		return "", fmt.Errorf("write wrapper go.mod: %w", err)
	}
	os.Remove(filepath.Join(mod, "go.sum"))
	if err := b.g.run(ctx, mod, nil, b.g.goBin, "get", supervisorPackage+"@"+SupervisorVersion); err != nil {
		return "", err
	}
	tmp := out + ".tmp"
	args := append(append([]string{"build"}, supervisorBuildFlags...), "-o", tmp, supervisorPackage)
	if err := b.g.run(ctx, mod, nil, b.g.goBin, args...); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("install supervisor: %w", err)
	}
	return out, nil
}

// buildCollector builds one collector with ocb, checks that it reports its
// label, and packages it.
func (b *builder) buildCollector(ctx context.Context, ocb string, spec collectorSpec) (Collector, error) {
	if !safeVersion(spec.Version) {
		return Collector{}, fmt.Errorf("collector version %q cannot name a directory", spec.Version)
	}
	what := "collector " + spec.Version
	if spec.Broken {
		what += " (broken: no opamp extension)"
	}
	exe, err := b.step(ctx, what, func(ctx context.Context) (string, error) {
		return b.ocbBuild(ctx, ocb, spec)
	})
	if err != nil {
		return Collector{}, err
	}
	if b.in.GOOS == runtime.GOOS && b.in.GOARCH == runtime.GOARCH {
		if err := checkVersion(ctx, exe, spec.Version); err != nil {
			return Collector{}, err
		}
	}
	archive := filepath.Join(b.dir, "artifacts", archiveName(spec.Version, b.in.GOOS, b.in.GOARCH))
	if err := writeArchive(archive, exe, ExeName(b.in.GOOS, CollectorExecutable)); err != nil {
		return Collector{}, err
	}
	exeSum, _, err := fileSHA256(exe)
	if err != nil {
		return Collector{}, err
	}
	arSum, arSize, err := fileSHA256(archive)
	if err != nil {
		return Collector{}, err
	}
	b.log.Info("peers: packaged "+filepath.Base(archive), "sha256", arSum, "bytes", arSize)
	return Collector{
		Version:          spec.Version,
		Broken:           spec.Broken,
		Executable:       exe,
		ExecutableSHA256: exeSum,
		Archive:          archive,
		ArchiveSHA256:    arSum,
		ArchiveSize:      arSize,
	}, nil
}

func (b *builder) ocbBuild(ctx context.Context, ocb string, spec collectorSpec) (string, error) {
	name := ExeName(b.in.GOOS, CollectorExecutable) // as ocb names it
	out := filepath.Join(b.dir, "collectors", spec.Version, name)
	if exists(out) {
		return out, nil
	}
	src := filepath.Join(b.dir, "src", "otelcol-"+spec.Version)
	if err := os.RemoveAll(src); err != nil {
		return "", fmt.Errorf("clean %s: %w", src, err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	dist := filepath.Join(src, "dist")
	manifest, err := renderManifest(spec, dist)
	if err != nil {
		return "", err
	}
	mpath := filepath.Join(src, "manifest.yaml")
	if err := os.WriteFile(mpath, manifest, 0o644); err != nil {
		return "", fmt.Errorf("write ocb manifest: %w", err)
	}
	if err := b.g.run(ctx, src, nil, ocb, "--config", mpath); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(dist, name), out); err != nil {
		return "", fmt.Errorf("install collector %s: %w", spec.Version, err)
	}
	return out, nil
}

// checkVersion runs `exe --version` and requires it to print version.
func checkVersion(ctx context.Context, exe, version string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %w: %s", exe, err, out)
	}
	want := CollectorExecutable + " version " + version
	if strings.TrimSpace(string(out)) != want {
		return fmt.Errorf("%s --version printed %q, want %q", exe, strings.TrimSpace(string(out)), want)
	}
	return nil
}
