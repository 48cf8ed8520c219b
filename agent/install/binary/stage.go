package binary

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/myriarch/myriarch/agent/install"
	"github.com/myriarch/myriarch/agent/unpack"
)

// Prepare implements install.Preparer: it records what <root>/current runs
// and names the new version's directory; an offer of what current already
// points at is installed.
func (b *Backend) Prepare(_ context.Context, t *install.Txn) (bool, error) {
	rec := t.Record()
	prev, err := readCurrent(b.o.Root)
	if err != nil {
		return false, install.Fail(install.Transient, err)
	}
	rec.PrevDir = prev
	rec.NewDir = rec.Version + "-" + rec.Hash[:8]
	return prev == rec.NewDir, nil
}

// Stage unpacks the artifact into <root>/versions/<version>-<sha8> (a raw
// executable, .tar.gz or .zip; entries confined to the directory, sizes
// capped) and runs the pre-activation check: `<exe> --version` must name
// the offered version.
func (b *Backend) Stage(ctx context.Context, t *install.Txn) error {
	rec := t.Record()
	dir, err := unpack.Unpack(t.Artifact(), filepath.Join(b.o.Root, "versions"), rec.NewDir, unpack.Options{
		Executable: b.o.Executable, MaxEntrySize: b.env.MaxPackageSize, MaxTotalSize: 2 * b.env.MaxPackageSize,
	})
	if err != nil {
		if errors.Is(err, syscallENOSPC) {
			return install.Fail(install.Transient, err)
		}
		return install.Fail(install.Artifact, err)
	}
	if err := t.Step(cpUnpacked); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	if err := install.CheckExecutable(ctx, filepath.Join(dir, b.o.Executable), []string{"--version"}, rec.Version, b.env.VersionCheckTimeout); err != nil {
		return install.Fail(install.Artifact, err)
	}
	if err := t.Step(cpVersionChecked); err != nil {
		return install.Failf(install.Transient, "journal: %w", err)
	}
	return nil
}
