package peerbuild

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// CacheEnv names an environment variable that, when set, replaces the default
// cache root $HOME/.cache/myriarch/peers.
const CacheEnv = "MYRIARCH_PEERS_CACHE"

// Options tune Ensure. The zero value is the normal setting.
type Options struct {
	// CacheRoot holds one directory per input hash. Empty means $CacheEnv,
	// else $HOME/.cache/myriarch/peers.
	CacheRoot string
	// GOOS and GOARCH are the system the peers are built for; empty means
	// this one. Peers built for another system are not run by the build
	// (their version check is left to where they run).
	GOOS, GOARCH string
}

// Ensure returns the peers, building whatever is missing first. A warm cache
// costs a few seconds (the archives are re-hashed and the executables
// checked); a cold one takes minutes and logs progress. Concurrent callers,
// in any process, wait for a single build.
func Ensure(ctx context.Context, log *slog.Logger) (*Peers, error) {
	return EnsureWith(ctx, log, Options{})
}

// EnsureWith is Ensure with options.
func EnsureWith(ctx context.Context, log *slog.Logger, opts Options) (*Peers, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	root, err := cacheRoot(opts)
	if err != nil {
		return nil, err
	}
	goBin, err := findGo()
	if err != nil {
		return nil, err
	}
	g := goTool{goBin: goBin}
	goVersion, err := g.output(ctx, "env", "GOVERSION")
	if err != nil {
		return nil, err
	}
	in := defaultInputs(goVersion)
	if opts.GOOS != "" {
		in.GOOS = opts.GOOS
	}
	if opts.GOARCH != "" {
		in.GOARCH = opts.GOARCH
	}
	g.goos, g.goarch = in.GOOS, in.GOARCH
	sum, err := in.hash()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, sum)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create peers cache %s: %w", dir, err)
	}
	lock, err := acquireLock(ctx, log, filepath.Join(dir, "lock"))
	if err != nil {
		return nil, err
	}
	defer lock.release()

	if p, err := loadRecord(dir); err == nil {
		log.Debug("peers: using cache", "dir", dir)
		p.GOOS = in.GOOS // a record written before it was recorded lacks it
		return p, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		log.Info("peers: cache record unusable, rebuilding from scratch", "dir", dir, "reason", err)
		if err := clearOutputs(dir); err != nil {
			return nil, err
		}
	}

	b := &builder{dir: dir, in: in, log: log, g: g}
	return b.build(ctx)
}

func cacheRoot(opts Options) (string, error) {
	if opts.CacheRoot != "" {
		return opts.CacheRoot, nil
	}
	if v := os.Getenv(CacheEnv); v != "" {
		return v, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("peers cache root: %w (set %s)", err, CacheEnv)
	}
	return filepath.Join(home, ".cache", "myriarch", "peers"), nil
}
