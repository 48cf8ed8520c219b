package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/myriarch/myriarch/internal/adminclient"
)

// command is one (sub)command's flag set with its usage text: a synopsis
// line, an optional description and the flags.
type command struct {
	fs       *flag.FlagSet
	synopsis string // after "usage: myriarchd "
	about    string
	// flags prints the flags; nil prints fs's defaults.
	flags func(w io.Writer)
}

func newCommand(name, synopsis, about string) *command {
	c := &command{fs: flag.NewFlagSet(name, flag.ContinueOnError), synopsis: synopsis, about: about}
	c.fs.SetOutput(io.Discard) // parse reports problems itself
	c.fs.Usage = func() {}
	return c
}

func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: myriarchd %s\n", c.synopsis)
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", c.about)
	}
	hasFlags := false
	c.fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if !hasFlags {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	if c.flags != nil {
		c.flags(w)
		return
	}
	printFlags(w, c.fs)
}

// printFlags lists fs's flags as --name ARG with their usage and default.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if arg != "" {
			name += " " + arg
		}
		fmt.Fprintf(w, "  %s\n        %s", name, usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "map[]" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// parse parses args. -h or --help prints the usage to stdout (exit 0); a
// bad flag prints the problem and the usage to stderr (exit 2). done says
// the command has nothing more to do.
func (c *command) parse(args []string, stdout, stderr io.Writer) (code int, done bool) {
	err := c.fs.Parse(args)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		c.usage(stdout)
		return 0, true
	default:
		fmt.Fprintf(stderr, "myriarchd %s: %v\n", c.fs.Name(), err)
		c.usage(stderr)
		return 2, true
	}
}

// parseFlags parses args, which hold flags only: an argument is a usage
// error.
func (c *command) parseFlags(args []string, stdout, stderr io.Writer) (code int, done bool) {
	if code, done = c.parse(args, stdout, stderr); done {
		return code, done
	}
	if c.fs.NArg() > 0 {
		return c.usageError(stderr, "unexpected argument %q", c.fs.Arg(0)), true
	}
	return 0, false
}

// parseMixed is parse for commands that take positional arguments, which
// may come before, between or after the flags ("users update ada --role
// viewer"); it returns them.
func (c *command) parseMixed(args []string, stdout, stderr io.Writer) (positional []string, code int, done bool) {
	for {
		if code, done := c.parse(args, stdout, stderr); done {
			return nil, code, true
		}
		if c.fs.NArg() == 0 {
			return positional, 0, false
		}
		positional = append(positional, c.fs.Arg(0))
		args = c.fs.Args()[1:]
	}
}

// usageError prints a problem with the arguments and the usage to stderr; exit 2.
func (c *command) usageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "myriarchd %s: %s\n", c.fs.Name(), fmt.Sprintf(format, args...))
	c.usage(stderr)
	return 2
}

// isHelp reports whether arg asks for help in place of a subcommand.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// subcommand runs the subcommand of group named by args[0] with the rest
// of args: usage on stdout for help, on stderr (exit 2) when it is missing
// or unknown.
func subcommand(group, usage string, subs map[string]func(args []string, stdout, stderr io.Writer) int, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, usage)
		return 2
	case isHelp(args[0]):
		fmt.Fprint(stdout, usage)
		return 0
	}
	run, ok := subs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "myriarchd %s: unknown subcommand %q\n%s", group, args[0], usage)
		return 2
	}
	return run(args[1:], stdout, stderr)
}

// call makes the admin API client and has it do one request, decoding the
// answer into out; a failure is printed as the command's problem (the
// caller exits 1).
func (c *command) call(stderr io.Writer, client func() (*adminclient.Client, error), method, path string, body, out any) (*adminclient.Client, bool) {
	cl, err := client()
	if err == nil {
		err = cl.Do(method, path, body, out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "myriarchd %s: %v\n", c.fs.Name(), err)
		return nil, false
	}
	return cl, true
}
