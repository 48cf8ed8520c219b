// Package catalog imports an upstream collector release, as an operator
// downloaded it, into the estate's catalog: each archive checked against
// its Sigstore bundle under a policy (and against the release's
// checksums), then copied under artifacts/ and described in
// packages/<name>/<version>.yaml with its bundle, which myriarchd then
// serves from /artifacts/ and offers.
package catalog

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/agent/verify/sigstoreverify"
	"github.com/myriarch/myriarch/internal/filehash"
)

// BundleSuffix names an archive's Sigstore bundle in a release directory.
const BundleSuffix = ".sigstore.json"

// Options are what to import, from where, into which estate, under which
// policy.
type Options struct {
	Dir     string // the release directory
	Estate  string // the estate directory
	Package string // the package name (otelcol-contrib)
	Version string // its version (0.149.0)
	// Executable is the collector's file name in the archives (default:
	// Package).
	Executable string
	Policy     verify.SigstorePolicy
	// Force replaces a package version already in the catalog.
	Force bool
}

// Imported is one archive imported.
type Imported struct {
	OS, Arch, File, SHA256, Bundle string
}

// archiveRE is the releases' archive naming: <name>_<version>_<os>_<arch>.tar.gz.
var archiveRE = regexp.MustCompile(`^(.+)_v?([0-9][^_]*)_([a-z0-9]+)_([a-z0-9]+)\.tar\.gz$`)

// Import checks every archive of o.Package at o.Version in o.Dir, then
// copies them with their bundles into the estate and writes the package
// version file. Every problem is reported at once, and nothing is written
// unless every archive checks.
func Import(o Options) ([]Imported, error) {
	if o.Executable == "" {
		o.Executable = o.Package
	}
	v, err := sigstoreverify.New(o.Policy)
	if err != nil {
		return nil, err
	}
	pkgFile := filepath.Join(o.Estate, "packages", o.Package, o.Version+".yaml")
	if _, err := os.Stat(pkgFile); err == nil && !o.Force {
		return nil, fmt.Errorf("%s exists: the catalog has %s %s (--force replaces it)", pkgFile, o.Package, o.Version)
	}
	entries, err := os.ReadDir(o.Dir)
	if err != nil {
		return nil, err
	}
	sums, err := checksums(o.Dir)
	if err != nil {
		return nil, err
	}
	var out []Imported
	var errs []error
	for _, e := range entries {
		m := archiveRE.FindStringSubmatch(e.Name())
		if m == nil || m[1] != o.Package || m[2] != strings.TrimPrefix(o.Version, "v") {
			continue
		}
		path := filepath.Join(o.Dir, e.Name())
		sum, err := filehash.SHA256(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.Name(), err))
			continue
		}
		if want, ok := sums[e.Name()]; ok && want != sum {
			errs = append(errs, fmt.Errorf("%s: SHA-256 %s, but the release's checksums say %s", e.Name(), sum, want))
			continue
		}
		bundle, err := os.ReadFile(path + BundleSuffix)
		if err != nil {
			if pairPresent(path) {
				errs = append(errs, fmt.Errorf("%s: only a .sig and .pem pair, which holds no transparency-log entry to check offline: "+
					"download the release's %s bundle", e.Name(), BundleSuffix))
				continue
			}
			errs = append(errs, fmt.Errorf("%s: no Sigstore bundle (%s): %w", e.Name(), e.Name()+BundleSuffix, err))
			continue
		}
		raw, _ := hex.DecodeString(sum)
		if err := v.Verify(bundle, raw); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.Name(), err))
			continue
		}
		out = append(out, Imported{OS: m[3], Arch: m[4], File: e.Name(), SHA256: sum, Bundle: e.Name() + BundleSuffix})
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("no archive of %s %s in %s (want %s_%s_<os>_<arch>.tar.gz)", o.Package, o.Version, o.Dir, o.Package, o.Version))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Imported) int { return strings.Compare(a.OS+a.Arch, b.OS+b.Arch) })
	return out, write(o, out, pkgFile)
}

// pairPresent reports whether an archive has cosign's older detached
// signature and certificate beside it.
func pairPresent(archive string) bool {
	_, sigErr := os.Stat(archive + ".sig")
	_, pemErr := os.Stat(archive + ".pem")
	return sigErr == nil && pemErr == nil
}

// checksums reads the release's checksums file, if any: "<sha256>  <file>" lines.
func checksums(dir string) (map[string]string, error) {
	out := map[string]string{}
	matches, _ := filepath.Glob(filepath.Join(dir, "*checksums.txt"))
	for _, m := range matches {
		f, err := os.Open(m)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
		for sc.Scan() {
			if sum, name, ok := strings.Cut(strings.TrimSpace(sc.Text()), "  "); ok {
				out[strings.TrimPrefix(strings.TrimSpace(name), "*")] = strings.ToLower(sum)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
	}
	return out, nil
}

// write copies the archives and bundles under artifacts/<package>/<version>/
// and writes the package version file, each through a synced temporary
// file renamed into place (journal.WriteFrom).
func write(o Options, imported []Imported, pkgFile string) error {
	rel := filepath.Join("artifacts", o.Package, o.Version)
	dst := filepath.Join(o.Estate, rel)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	var y strings.Builder
	fmt.Fprintf(&y, "name: %s\nversion: %s\n# Imported from an upstream release, each archive checked against its Sigstore bundle.\nartifacts:\n", o.Package, o.Version)
	for _, a := range imported {
		for _, f := range []string{a.File, a.Bundle} {
			if err := copyFile(filepath.Join(o.Dir, f), filepath.Join(dst, f)); err != nil {
				return err
			}
		}
		fmt.Fprintf(&y, "  - os: %s\n    arch: %s\n    file: %s\n    sha256: %s\n    sigstoreBundle: %s\n    executable: %s\n",
			a.OS, a.Arch, filepath.ToSlash(filepath.Join(rel, a.File)), a.SHA256, filepath.ToSlash(filepath.Join(rel, a.Bundle)), o.Executable)
	}
	if err := os.MkdirAll(filepath.Dir(pkgFile), 0o755); err != nil {
		return err
	}
	return journal.WriteFile(pkgFile, []byte(y.String()), 0o644)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return journal.WriteFrom(dst, in, 0o644)
}
