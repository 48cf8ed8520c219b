package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/myriarch/myriarch/agent/sitesetup"
)

// cmdSetup sets this Windows host up as a site (install.ps1 runs it with
// its flags) or, with --uninstall, removes what it set up.
func cmdSetup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("myriarch-updater setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s sitesetup.Settings
	var mirrors string
	fs.StringVar(&s.Server, "server", "", "the myriarch server: ws://, wss://, http:// or https:// URL (without a path, /v1/opamp)")
	fs.StringVar(&s.Token, "token", "", "the enrollment token (or --token-file)")
	fs.StringVar(&s.TokenFile, "token-file", "", "a file holding the enrollment token")
	fs.StringVar(&s.SiteID, "site-id", "", "site.id")
	fs.StringVar(&s.SiteType, "site-type", "", "site.type, lower case")
	fs.StringVar(&s.SiteName, "site-name", "", "site.name (optional)")
	fs.StringVar(&s.SiteCountry, "site-country", "", "site.country: ISO 3166-1 alpha-2 code")
	fs.StringVar(&s.SiteRegion, "site-region", "", "site.region (optional)")
	fs.StringVar(&s.SiteTimezone, "site-timezone", "", "site.timezone: IANA time zone")
	fs.StringVar(&s.Environment, "environment", "", "deployment.environment.name")
	fs.StringVar(&s.Mode, "mode", "binary", "binary or container")
	fs.StringVar(&s.CollectorVersion, "collector-version", "", "the collector version to install (binary mode)")
	fs.StringVar(&s.Artifacts, "artifacts", "", "the directory holding the artifacts, each with its .sha256 and .minisig")
	fs.StringVar(&s.MinisignKey, "minisign-key", "", "the minisign public key (RW...) or .pub file the artifacts are signed with")
	fs.StringVar(&s.RootKey, "root-key", "", "the root key of the estate's signed keyring (optional)")
	fs.StringVar(&mirrors, "catalog-mirrors", "", "more download hosts, comma-separated: host, host:port or *.example.com")
	fs.StringVar(&s.Root, "root", "", "install under this prefix instead of %ProgramFiles% and %ProgramData% (needs --no-start)")
	fs.BoolVar(&s.NoStart, "no-start", false, "register and start no service")
	fs.BoolVar(&s.DryRun, "dry-run", false, "say what would change and change nothing")
	uninstall := fs.Bool("uninstall", false, "remove the services, the executables and the collector")
	purge := fs.Bool("purge", false, "with --uninstall: remove the configuration and data too")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "myriarch-updater setup: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if mirrors != "" {
		s.CatalogMirrors = strings.Split(mirrors, ",")
	}
	var err error
	switch {
	case *purge && !*uninstall:
		err = &sitesetup.Problems{Err: errors.New("--purge only goes with --uninstall")}
	case *uninstall:
		err = sitesetup.Uninstall(s, *purge, stdout)
	default:
		err = sitesetup.Install(ctx, s, stdout)
	}
	var p *sitesetup.Problems
	switch {
	case errors.As(err, &p):
		lines := strings.Split(p.Error(), "\n")
		what := fmt.Sprintf("%d problems", len(lines))
		if len(lines) == 1 {
			what = "1 problem"
		}
		fmt.Fprintf(stderr, "myriarch-updater setup: %s, nothing was changed:\n", what)
		for _, l := range lines {
			fmt.Fprintf(stderr, "  - %s\n", l)
		}
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "myriarch-updater setup: %v\n", err)
		return 1
	}
	return 0
}
