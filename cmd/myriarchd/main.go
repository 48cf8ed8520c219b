// Command myriarchd is the myriarch OpAMP server: `serve` runs it; `token`
// and `agents` are clients of its admin API.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/myriarch/myriarch/internal/buildinfo"
)

const usage = `usage: myriarchd <command> [flags]

commands:
  serve                       run the server
  token create|list|revoke    manage enrollment tokens (admin API)
  agents list|show UID        show agents (admin API)
  version                     print the version
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
		return serve(args[1:], stderr)
	case "token":
		return tokenCmd(args[1:], stdout, stderr)
	case "agents":
		return agentsCmd(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "myriarchd", buildinfo.Version)
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "myriarchd: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
