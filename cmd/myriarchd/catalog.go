package main

import (
	"context"
	"fmt"

	"github.com/myriarch/myriarch/internal/cmdline"
	"github.com/myriarch/myriarch/server/catalog"
)

const catalogImportAbout = `Imports an upstream collector release, as downloaded (its <name>_<version>_<os>_<arch>.tar.gz
archives, their .sigstore.json bundles and its checksums file), into the estate's catalog: each
archive is checked against its bundle under the policy given (certificate identity and issuer,
the transparency-log entry) and against the checksums, then copied under artifacts/<name>/<version>/
with its bundle, and packages/<name>/<version>.yaml is written. myriarchd serves them from
/artifacts/ and offers them with their bundles once the estate is reloaded; updaters check the
bundles again (trust.sigstore). Every problem is reported, and nothing is written unless every
archive checks.`

func catalogGroup() *cmdline.Group {
	return &cmdline.Group{Name: "catalog", Summary: "import an upstream release, checked with Sigstore, into the estate", Leaves: []*cmdline.Leaf{{
		Name:     "import",
		Synopsis: "catalog import DIR --estate DIR --package NAME --version V (--identity ID | --identity-regexp RE) (--issuer URL | --issuer-regexp RE) [flags]",
		Summary:  "check a downloaded release's archives with their Sigstore bundles and add them to the catalog",
		About:    catalogImportAbout,
		Setup: func(c *cmdline.Command) func(context.Context, []string) error {
			var o catalog.Options
			c.FS.StringVar(&o.Estate, "estate", "", "the estate `DIR` (required)")
			c.FS.StringVar(&o.Package, "package", "", "the package `NAME`, as in the archives' names (required), e.g. otelcol-contrib")
			c.FS.StringVar(&o.Version, "version", "", "the `VERSION` to import (required)")
			c.FS.StringVar(&o.Executable, "executable", "", "the collector's `FILE` name in the archives (default: the package name)")
			o.Policy.AddFlags(c.FS)
			c.FS.BoolVar(&o.Force, "force", false, "replace the version when the catalog has it")
			return func(_ context.Context, args []string) error {
				switch {
				case len(args) != 1:
					return cmdline.Usagef("want one release DIR")
				case o.Estate == "" || o.Package == "" || o.Version == "":
					return cmdline.Usagef("--estate, --package and --version are required")
				}
				if err := o.Policy.Check(); err != nil {
					return cmdline.Usagef("%v", err)
				}
				o.Dir = args[0]
				imported, err := catalog.Import(o)
				if err != nil {
					return err
				}
				for _, a := range imported {
					fmt.Fprintf(c.Stdout, "imported %s (%s/%s, sha256 %s) with its Sigstore bundle\n", a.File, a.OS, a.Arch, a.SHA256)
				}
				fmt.Fprintf(c.Stdout, "wrote packages/%s/%s.yaml: reload the estate to offer it\n", o.Package, o.Version)
				return nil
			}
		},
	}}}
}
