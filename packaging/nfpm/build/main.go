// Command build makes the deb and rpm packages of myriarch-updater and myriarchd from
// already built binaries, with nfpm as a library. It is a module of its own so that nfpm
// and its requirements stay out of the product's go.mod. `make packages` runs
//
//	cd packaging/nfpm/build && go run . -bin ../../../bin -packaging ../.. -version 0.1.0 -out ../../../bin/packages
//
// The package contents are declared in packaging/nfpm/<name>.yaml (nfpm's own format, so
// the nfpm command line can build them too with BIN, PACKAGING, VERSION and ARCH set).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

// options of one build; every field is a flag.
type options struct {
	bin, packaging, version, arch, out string
	packages, formats                  []string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the built binaries")
	fs.StringVar(&o.packaging, "packaging", "packaging", "the repository's packaging/ directory")
	fs.StringVar(&o.version, "version", "", "package version (semver, a leading v is dropped)")
	fs.StringVar(&o.arch, "arch", runtime.GOARCH, "GOARCH of the binaries")
	fs.StringVar(&o.out, "out", "bin/packages", "output directory")
	pkgs := fs.String("packages", "myriarch-updater,myriarchd", "comma-separated package names")
	formats := fs.String("formats", "deb,rpm", "comma-separated formats")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.packages = splitList(*pkgs)
	o.formats = splitList(*formats)
	o.version = strings.TrimPrefix(o.version, "v")

	var errs []error
	if o.version == "" {
		errs = append(errs, errors.New("-version is required"))
	}
	if fs.NArg() != 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	for _, f := range o.formats {
		if f != "deb" && f != "rpm" {
			errs = append(errs, fmt.Errorf("-formats: %q is not deb or rpm", f))
		}
	}
	for _, p := range o.packages {
		if _, err := os.Stat(filepath.Join(o.packaging, "nfpm", p+".yaml")); err != nil {
			errs = append(errs, fmt.Errorf("-packages: %q: %w", p, err))
		}
		if _, err := os.Stat(filepath.Join(o.bin, p)); err != nil {
			errs = append(errs, fmt.Errorf("-bin: binary of %q: %w", p, err))
		}
	}
	return o, errors.Join(errs...)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func run(args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	for _, d := range []*string{&o.bin, &o.packaging, &o.out} {
		if *d, err = filepath.Abs(*d); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	for _, p := range o.packages {
		for _, f := range o.formats {
			path, err := build(o, p, f)
			if err != nil {
				return fmt.Errorf("%s %s: %w", p, f, err)
			}
			fmt.Fprintln(stdout, path)
		}
	}
	return nil
}

// build writes one package and returns its path.
func build(o options, name, format string) (string, error) {
	vars := map[string]string{"BIN": o.bin, "PACKAGING": o.packaging, "VERSION": o.version, "ARCH": o.arch}
	cfg, err := nfpm.ParseFileWithEnvMapping(filepath.Join(o.packaging, "nfpm", name+".yaml"),
		func(k string) string { return vars[k] })
	if err != nil {
		return "", err
	}
	info, err := cfg.Get(format)
	if err != nil {
		return "", err
	}
	// nfpm resolves script paths against the working directory; ours are relative to the
	// configuration file.
	for _, s := range []*string{&info.Scripts.PreInstall, &info.Scripts.PostInstall,
		&info.Scripts.PreRemove, &info.Scripts.PostRemove} {
		if *s != "" && !filepath.IsAbs(*s) {
			*s = filepath.Join(o.packaging, "nfpm", *s)
		}
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	pkgr, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	path := filepath.Join(o.out, pkgr.ConventionalFileName(info))
	// Stage and rename so that a failed build never leaves a truncated package behind.
	tmp, err := os.CreateTemp(o.out, ".pkg-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := pkgr.Package(info, tmp); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
