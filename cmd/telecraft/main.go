// Command telecraft composes OpenTelemetry Collector configurations offline:
// `telecraft vars` evaluates ${…} variable substitution against provider data,
// `telecraft render` renders a Blueprint to a collector config.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: telecraft <command> [flags]

commands:
  vars     evaluate ${…} substitution (see telecraft vars -h)
  render   render a Blueprint to a collector config (see telecraft render -h)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "vars":
		return runVars(args[1:], stdin, stdout, stderr)
	case "render":
		return runRender(args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "telecraft: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
