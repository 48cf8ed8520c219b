// Package cmdline is how myriarch's programs read their command lines: a
// tree of commands, each with its flags, positional arguments and usage;
// the exit codes every command keeps; and shell completion from the tree.
//
// Exit codes: 0 done; 1 failed (no answer, a server error, a local
// problem); 2 a usage error (an unknown command or flag, a missing
// argument); 3 refused (the server answered, and refused the request: no
// credential, not allowed, no such object, a conflict, an invalid
// request).
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitUsage   = 2
	ExitRefused = 3
)

// Refusal is an error the other side answered with: the command exits 3.
type Refusal interface {
	error
	Refused() bool
}

// Command is one command's flag set with its usage text: a synopsis line,
// an optional description and the flags.
type Command struct {
	FS       *flag.FlagSet
	prog     string
	synopsis string // after "usage: PROG "
	about    string
	// Flags prints the flags; nil prints FS's defaults.
	Flags  func(w io.Writer)
	shorts map[string]string // long flag name -> its one-letter alias
	// Where a running command reads and writes (Program.Run sets them).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// New returns the command name ("agents list") of prog, whose usage is
// "usage: PROG SYNOPSIS" and about.
func New(prog, name, synopsis, about string) *Command {
	c := &Command{FS: flag.NewFlagSet(name, flag.ContinueOnError), prog: prog, synopsis: synopsis, about: about}
	c.FS.SetOutput(io.Discard) // Parse reports problems itself
	c.FS.Usage = func() {}
	return c
}

// Name is the command's name ("agents list").
func (c *Command) Name() string { return c.FS.Name() }

// Usage prints the usage.
func (c *Command) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s %s\n", c.prog, c.synopsis)
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", c.about)
	}
	hasFlags := false
	c.FS.VisitAll(func(*flag.Flag) { hasFlags = true })
	if !hasFlags {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	if c.Flags != nil {
		c.Flags(w)
		return
	}
	c.printFlags(w)
}

// Short makes -short an alias of the flag --long, declared already.
func (c *Command) Short(short, long string) {
	f := c.FS.Lookup(long)
	c.FS.Var(f.Value, short, "")
	if c.shorts == nil {
		c.shorts = map[string]string{}
	}
	c.shorts[long] = short
}

func (c *Command) printFlags(w io.Writer) {
	short := map[string]bool{}
	for _, s := range c.shorts {
		short[s] = true
	}
	c.FS.VisitAll(func(f *flag.Flag) {
		if !short[f.Name] {
			printFlag(w, f, c.shorts[f.Name])
		}
	})
}

// PrintFlags lists fs's flags as --name ARG with their usage and default.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) { printFlag(w, f, "") })
}

func printFlag(w io.Writer, f *flag.Flag, short string) {
	arg, usage := flag.UnquoteUsage(f)
	name := "--" + f.Name
	if short != "" {
		name = "-" + short + ", " + name
	}
	if arg != "" {
		name += " " + arg
	}
	fmt.Fprintf(w, "  %s\n        %s", name, usage)
	if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "map[]" && f.DefValue != "[]" {
		fmt.Fprintf(w, " (default %s)", f.DefValue)
	}
	fmt.Fprintln(w)
}

// Parse parses args. -h or --help prints the usage to stdout (exit 0); a
// bad flag prints the problem and the usage to stderr (exit 2). done says
// the command has nothing more to do.
func (c *Command) Parse(args []string, stdout, stderr io.Writer) (code int, done bool) {
	err := c.FS.Parse(args)
	switch {
	case err == nil:
		return ExitOK, false
	case errors.Is(err, flag.ErrHelp):
		c.Usage(stdout)
		return ExitOK, true
	default:
		fmt.Fprintf(stderr, "%s %s: %v\n", c.prog, c.Name(), err)
		c.Usage(stderr)
		return ExitUsage, true
	}
}

// ParseFlags parses args, which hold flags only: an argument is a usage
// error.
func (c *Command) ParseFlags(args []string, stdout, stderr io.Writer) (code int, done bool) {
	if code, done = c.Parse(args, stdout, stderr); done {
		return code, done
	}
	if c.FS.NArg() > 0 {
		return c.UsageError(stderr, "unexpected argument %q", c.FS.Arg(0)), true
	}
	return ExitOK, false
}

// ParseMixed is Parse for commands that take positional arguments, which
// may come before, between or after the flags ("users update ada --role
// viewer"); it returns them.
func (c *Command) ParseMixed(args []string, stdout, stderr io.Writer) (positional []string, code int, done bool) {
	for {
		if code, done := c.Parse(args, stdout, stderr); done {
			return nil, code, true
		}
		if c.FS.NArg() == 0 {
			return positional, ExitOK, false
		}
		positional = append(positional, c.FS.Arg(0))
		args = c.FS.Args()[1:]
	}
}

// UsageError prints a problem with the arguments and the usage to stderr;
// it returns ExitUsage.
func (c *Command) UsageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s %s: %s\n", c.prog, c.Name(), fmt.Sprintf(format, args...))
	c.Usage(stderr)
	return ExitUsage
}

// Fail prints err as the command's problem and returns its exit code:
// ExitRefused for a Refusal, ExitUsage for a *UsageProblem (with the
// usage), ExitError otherwise.
func (c *Command) Fail(stderr io.Writer, err error) int {
	var u *UsageProblem
	if errors.As(err, &u) {
		return c.UsageError(stderr, "%s", u.Msg)
	}
	fmt.Fprintf(stderr, "%s %s: %v\n", c.prog, c.Name(), err)
	var r Refusal
	if errors.As(err, &r) && r.Refused() {
		return ExitRefused
	}
	return ExitError
}

// UsageProblem is a problem with a command's arguments found by its
// action: the command exits 2 with its usage.
type UsageProblem struct{ Msg string }

func (u *UsageProblem) Error() string { return u.Msg }

// Usagef returns a *UsageProblem.
func Usagef(format string, args ...any) error {
	return &UsageProblem{Msg: fmt.Sprintf(format, args...)}
}

// IsHelp reports whether arg asks for help in place of a subcommand.
func IsHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}
