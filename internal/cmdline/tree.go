package cmdline

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Leaf is a command that acts.
type Leaf struct {
	Name     string // in its group ("list"); "" for a group's only command
	Synopsis string // after the program's name: "agents show [flags] UID"
	Summary  string // its line in the usage of the group
	About    string
	// Args names the kind of each positional argument, for completion
	// ("agent", "fleet"; see Lookup); the last one repeats when Variadic.
	Args     []string
	Variadic bool
	// Setup declares the flags on c and returns the action, called with
	// the positional arguments once they are parsed (flags and arguments
	// may come in any order).
	Setup func(c *Command) func(ctx context.Context, args []string) error
	// Raw runs a command that reads its own command line (Setup nil);
	// completion completes its name only.
	Raw func(args []string, stdout, stderr io.Writer) int
}

// Group is a word of the command line and what follows it.
type Group struct {
	Name    string
	Summary string
	Leaves  []*Leaf
	// Default runs when the word after the group names none of its
	// Leaves (a flag, or nothing): "backup --out F", "audit --actor ada".
	Default *Leaf
}

// Program is a command line's tree.
type Program struct {
	Name   string
	Groups []*Group
	// Footer ends the program's usage.
	Footer string
	// Lookup finds the candidates of arguments for completion.
	Lookup Lookup
}

func (g *Group) leaf(name string) *Leaf {
	for _, l := range g.Leaves {
		if l.Name == name {
			return l
		}
	}
	return nil
}

func (p *Program) group(name string) *Group {
	for _, g := range p.Groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}

// Usage is the program's usage: each group with its words and summary.
func (p *Program) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <command> [flags]\n\ncommands:\n", p.Name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, g := range p.Groups {
		fmt.Fprintf(tw, "  %s\t%s\n", g.words(), g.Summary)
	}
	tw.Flush()
	if p.Footer != "" {
		fmt.Fprintf(w, "\n%s", p.Footer)
	}
}

func (g *Group) words() string {
	if len(g.Leaves) == 0 {
		return g.Name
	}
	names := make([]string, len(g.Leaves))
	for i, l := range g.Leaves {
		names[i] = l.Name
	}
	return g.Name + " " + strings.Join(names, "|")
}

// usage is the group's usage: its subcommands with their synopses.
func (g *Group) usage(prog string, w io.Writer) {
	fmt.Fprintf(w, "usage: %s %s <subcommand> [flags]\n\nsubcommands:\n", prog, g.Name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, l := range g.Leaves {
		syn := strings.TrimPrefix(l.Synopsis, g.Name+" ")
		fmt.Fprintf(tw, "  %s\t%s\n", syn, l.Summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nEach subcommand prints its flags with --help.")
}

// Run runs the command args name and returns its exit code.
func (p *Program) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		p.Usage(stderr)
		return ExitUsage
	}
	switch {
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
		p.Usage(stdout)
		return ExitOK
	case args[0] == CompleteCommand:
		for _, c := range p.Complete(args[1:]) {
			fmt.Fprintln(stdout, c)
		}
		return ExitOK
	}
	g := p.group(args[0])
	if g == nil {
		fmt.Fprintf(stderr, "%s: unknown command %q\n", p.Name, args[0])
		p.Usage(stderr)
		return ExitUsage
	}
	rest := args[1:]
	var l *Leaf
	switch {
	case len(rest) > 0 && g.leaf(rest[0]) != nil && rest[0] != "":
		l, rest = g.leaf(rest[0]), rest[1:]
	case g.Default != nil && (len(g.Leaves) == 0 || len(rest) == 0 || strings.HasPrefix(rest[0], "-") && !IsHelp(rest[0])):
		l = g.Default
	case len(rest) == 0:
		fmt.Fprintf(stderr, "%s %s: a subcommand is needed\n", p.Name, g.Name)
		g.usage(p.Name, stderr)
		return ExitUsage
	case IsHelp(rest[0]):
		g.usage(p.Name, stdout)
		return ExitOK
	default:
		fmt.Fprintf(stderr, "%s %s: unknown subcommand %q\n", p.Name, g.Name, rest[0])
		g.usage(p.Name, stderr)
		return ExitUsage
	}
	if l.Raw != nil {
		return l.Raw(rest, stdout, stderr)
	}
	c := New(p.Name, strings.TrimSpace(g.Name+" "+l.Name), l.Synopsis, l.About)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	act := l.Setup(c)
	pos, code, done := c.ParseMixed(rest, stdout, stderr)
	if done {
		return code
	}
	if err := act(ctx, pos); err != nil {
		return c.Fail(stderr, err)
	}
	return ExitOK
}
