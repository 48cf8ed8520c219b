// Command myriarchd is the myriarch OpAMP server: `serve` runs it; `token`,
// `agents` and `audit` are clients of its admin API.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/myriarch/myriarch/internal/buildinfo"
)

const usage = `usage: myriarchd <command> [flags]

commands:
  serve                       run the server (settings: myriarchd serve --help)
  token create|list|revoke    manage enrollment tokens (admin API)
  agents list|show UID        show agents (admin API)
  estate plan|reload          what the estate would change, without applying it; reload it
  users create|list|update|delete
                              manage the users of the admin API and console
  apikeys create|list|delete  manage API keys for scripts
  audit [--json] [filters]    print the audit trail, newest first (admin API)
  audit verify                verify the audit trail's chain of hashes (admin API)
  console link                print a one-time login link to the browser console
  backup --out FILE           take a consistent backup of the running server's store
  restore FILE --data-dir D|--store URL
                              restore a backup into an empty store (server stopped)
  version                     print the version
  help [config]               print this text, or the settings of serve as Markdown

Every command prints its usage with --help.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "token":
		return tokenCmd(args[1:], stdout, stderr)
	case "agents":
		return agentsCmd(args[1:], stdout, stderr)
	case "estate":
		return estateCmd(args[1:], stdout, stderr)
	case "users":
		return usersCmd(args[1:], stdout, stderr)
	case "apikeys":
		return apikeysCmd(args[1:], stdout, stderr)
	case "audit":
		return auditCmd(args[1:], stdout, stderr)
	case "console":
		return consoleCmd(args[1:], stdout, stderr)
	case "backup":
		return backupCmd(args[1:], stdout, stderr)
	case "restore":
		return restoreCmd(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		return versionCmd(args[1:], stdout, stderr)
	case "help":
		return helpCmd(args[1:], stdout, stderr)
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "myriarchd: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

func versionCmd(args []string, stdout, stderr io.Writer) int {
	c := newCommand("version", "version", "Prints the version of this build.")
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	fmt.Fprintln(stdout, "myriarchd", buildinfo.Version)
	return 0
}

func helpCmd(args []string, stdout, stderr io.Writer) int {
	c := newCommand("help", "help [config]", "Prints the commands, or with config every setting of serve\n(flag, environment variable, config file key, default) as a Markdown table.")
	if code, done := c.parse(args, stdout, stderr); done {
		return code
	}
	switch {
	case c.fs.NArg() == 0:
		fmt.Fprint(stdout, usage)
	case c.fs.NArg() == 1 && c.fs.Arg(0) == "config":
		printReference(stdout)
	default:
		return c.usageError(stderr, "unknown topic %q", c.fs.Arg(0))
	}
	return 0
}
