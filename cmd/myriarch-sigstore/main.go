// Command myriarch-sigstore verifies a Sigstore bundle for myriarch-updater,
// which runs it for each package offered with one: the bundle on standard
// input, the artifact's SHA-256 and the policy in flags. Exit 0: the
// bundle verifies; 1: it is refused, the reason on standard error; 2: a
// usage error. It makes no network call. `version` (or `--version`)
// prints its version, which is always the updater's beside it.
package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/agent/verify/sigstoreverify"
	"github.com/myriarch/myriarch/internal/buildinfo"
	"github.com/myriarch/myriarch/internal/cmdline"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "--version" { // as the updater answers it: a self-update checks both
		args = []string{"version"}
	}
	p := &cmdline.Program{Name: "myriarch-sigstore", Groups: []*cmdline.Group{
		{Name: "verify", Summary: "verify the Sigstore bundle on standard input", Default: &cmdline.Leaf{
			Synopsis: "verify --sha256 HEX (--identity ID | --identity-regexp RE) (--issuer URL | --issuer-regexp RE) [flags] < BUNDLE",
			About: "Verifies a Sigstore bundle (.sigstore.json) over the artifact of that SHA-256, offline: the certificate\n" +
				"chains to the trusted root's Fulcio, names the identity and issuer, and the signature is in the\n" +
				"transparency log (its inclusion checked from the bundle). Exit 0: it verifies; 1: refused, why on\n" +
				"standard error.",
			Setup: func(c *cmdline.Command) func(context.Context, []string) error {
				var pol verify.SigstorePolicy
				sum := c.FS.String("sha256", "", "the artifact's SHA-256, in `HEX`")
				pol.AddFlags(c.FS)
				return func(_ context.Context, args []string) error {
					if len(args) > 0 {
						return cmdline.Usagef("unexpected argument %q", args[0])
					}
					digest, err := hex.DecodeString(*sum)
					if err != nil || len(digest) != 32 {
						return cmdline.Usagef("--sha256: want 64 hex digits, got %q", *sum)
					}
					if err := pol.Check(); err != nil {
						return cmdline.Usagef("%v", err)
					}
					v, err := sigstoreverify.New(pol)
					if err != nil {
						return err
					}
					bundle, err := io.ReadAll(io.LimitReader(stdin, verify.MaxBundleSize+1))
					if err != nil {
						return fmt.Errorf("reading the bundle: %w", err)
					}
					return v.Verify(bundle, digest)
				}
			}}},
		{Name: "version", Summary: "print the version", Default: &cmdline.Leaf{Raw: func(_ []string, stdout, _ io.Writer) int {
			fmt.Fprintln(stdout, "myriarch-sigstore", buildinfo.Version)
			return 0
		}}},
	}}
	return p.Run(context.Background(), args, stdin, stdout, stderr)
}
