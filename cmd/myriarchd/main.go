// Command myriarchd is the myriarch OpAMP server: `serve` runs it; the
// other commands are clients of its admin API (internal/admincli), and
// `backup` and `restore` keep its store.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/myriarch/myriarch/internal/admincli"
	"github.com/myriarch/myriarch/internal/buildinfo"
	"github.com/myriarch/myriarch/internal/cmdline"
)

const footer = `Every command prints its usage with --help. Exit codes: 0 done, 1 failed,
2 a usage error, 3 refused by the server (no credential, not allowed, no such
object, a conflict, an invalid request). Shell completion: myriarchd completion
bash|zsh|fish.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// stdin is what the commands read (tests replace it).
var stdin io.Reader = os.Stdin

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = append([]string{"version"}, args[1:]...)
	}
	return program().Run(context.Background(), args, stdin, stdout, stderr)
}

// program is myriarchd's command line: the server, its store's backup and
// restore, and the admin API's client commands.
func program() *cmdline.Program {
	cli := admincli.New(admincli.Options{ServerConfig: serverSettings})
	p := &cmdline.Program{Name: "myriarchd", Footer: footer}
	p.Lookup = cli.Lookup
	p.Groups = append(p.Groups, &cmdline.Group{Name: "serve", Summary: "run the server (settings: myriarchd serve --help)",
		Default: &cmdline.Leaf{Raw: serve}})
	p.Groups = append(p.Groups, cli.Groups()...)
	p.Groups = append(p.Groups,
		&cmdline.Group{Name: "backup", Summary: "take a consistent backup of the running server's store", Default: backupLeaf(cli)},
		&cmdline.Group{Name: "restore", Summary: "restore a backup into an empty store (server stopped)", Default: &cmdline.Leaf{Raw: restoreCmd}},
		catalogGroup(),
		p.CompletionGroup(),
		&cmdline.Group{Name: "version", Summary: "print the version", Default: &cmdline.Leaf{Raw: versionCmd}},
		&cmdline.Group{Name: "help", Summary: "print this text, or the settings of serve as Markdown (help config)", Default: &cmdline.Leaf{Raw: helpCmd}},
	)
	p.Groups = append(p.Groups, cli.Aliases()...)
	return p
}

func versionCmd(args []string, stdout, stderr io.Writer) int {
	c := cmdline.New("myriarchd", "version", "version", "Prints the version of this build.")
	if code, done := c.ParseFlags(args, stdout, stderr); done {
		return code
	}
	fmt.Fprintln(stdout, "myriarchd", buildinfo.Version)
	return 0
}

func helpCmd(args []string, stdout, stderr io.Writer) int {
	c := cmdline.New("myriarchd", "help", "help [config]", "Prints the commands, or with config every setting of serve\n(flag, environment variable, config file key, default) as a Markdown table.")
	if code, done := c.Parse(args, stdout, stderr); done {
		return code
	}
	switch {
	case c.FS.NArg() == 0:
		program().Usage(stdout)
	case c.FS.NArg() == 1 && c.FS.Arg(0) == "config":
		printReference(stdout)
	default:
		return c.UsageError(stderr, "unknown topic %q", c.FS.Arg(0))
	}
	return 0
}
