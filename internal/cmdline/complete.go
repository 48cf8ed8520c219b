package cmdline

import (
	"context"
	"flag"
	"io"
	"slices"
	"strings"
)

// Lookup returns the candidates for an argument of a kind ("agent",
// "fleet", …, and "flag:NAME" for the value of flag --NAME); nil when it
// has none. words are the words before the one completed, for the
// connection flags they may hold.
type Lookup func(kind string, words []string) []string

// Complete returns the completions of the last of words (the word being
// typed, "" for a new one), after the program's name: commands, their
// subcommands, their flags, and, through lookup, their arguments.
func (p *Program) Complete(words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	if len(before) == 0 {
		var out []string
		for _, g := range p.Groups {
			out = append(out, g.Name)
		}
		return matching(out, cur)
	}
	g := p.group(before[0])
	if g == nil {
		return nil
	}
	rest := before[1:]
	var l *Leaf
	switch {
	case len(g.Leaves) == 0:
		l = g.Default
	case len(rest) > 0 && rest[0] != "" && g.leaf(rest[0]) != nil:
		l, rest = g.leaf(rest[0]), rest[1:]
	case len(rest) == 0 && !strings.HasPrefix(cur, "-") && len(g.Leaves) > 0:
		var out []string
		for _, l := range g.Leaves {
			out = append(out, l.Name)
		}
		return matching(out, cur)
	case g.Default != nil:
		l = g.Default
	default:
		return nil
	}
	if l == nil || l.Setup == nil {
		return nil
	}
	c := New(p.Name, l.Name, l.Synopsis, "")
	l.Setup(c)
	// The flag whose value is typed, or the positional argument's index.
	pos := 0
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if !strings.HasPrefix(w, "-") || w == "-" {
			pos++
			continue
		}
		if w == "--" {
			pos += len(rest) - i - 1
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if f := c.FS.Lookup(name); f != nil && !hasValue && !isBool(f) {
			i++ // its value
		}
	}
	if n := len(rest); n > 0 && strings.HasPrefix(rest[n-1], "-") && !strings.Contains(rest[n-1], "=") {
		if f := c.FS.Lookup(strings.TrimLeft(rest[n-1], "-")); f != nil && !isBool(f) {
			return matching(p.lookup("flag:"+f.Name, before), cur)
		}
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		short := map[string]bool{}
		for _, s := range c.shorts {
			short[s] = true
		}
		c.FS.VisitAll(func(f *flag.Flag) {
			if !short[f.Name] {
				out = append(out, "--"+f.Name)
			}
		})
		return matching(out, cur)
	}
	kind := ""
	switch {
	case pos < len(l.Args):
		kind = l.Args[pos]
	case l.Variadic && len(l.Args) > 0:
		kind = l.Args[len(l.Args)-1]
	default:
		return nil
	}
	return matching(p.lookup(kind, before), cur)
}

func (p *Program) lookup(kind string, words []string) []string {
	if p.Lookup == nil {
		return nil
	}
	return p.Lookup(kind, words)
}

// CompletionGroup is the command that prints the completion scripts:
// "PROG completion SHELL".
func (p *Program) CompletionGroup() *Group {
	return &Group{Name: "completion", Summary: "print the shell completion script (bash, zsh or fish)", Default: &Leaf{
		Synopsis: "completion bash|zsh|fish",
		About: "Prints the completion script of a shell: commands, flags, and agents' UIDs and fleets' names asked of the\n" +
			"server the command line names (its --admin, --config or data dir, as every command finds it).\n\n" +
			"  bash: source <(" + p.Name + " completion bash)   (or save it in /etc/bash_completion.d/" + p.Name + ")\n" +
			"  zsh:  source <(" + p.Name + " completion zsh)    (or save it as _" + p.Name + " in your $fpath)\n" +
			"  fish: " + p.Name + " completion fish | source  (or save it in ~/.config/fish/completions/" + p.Name + ".fish)",
		Args: []string{"shell"},
		Setup: func(c *Command) func(context.Context, []string) error {
			return func(_ context.Context, args []string) error {
				if len(args) != 1 {
					return Usagef("want one shell: bash, zsh or fish")
				}
				return p.Script(c.Stdout, args[0])
			}
		},
	}}
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func matching(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Script writes the completion script of shell (bash, zsh or fish), which
// asks the program itself: PROG __complete WORDS….
func (p *Program) Script(w io.Writer, shell string) error {
	var s string
	switch shell {
	case "bash":
		s = bashScript
	case "zsh":
		s = zshScript
	case "fish":
		s = fishScript
	default:
		return Usagef("no completion for shell %q (bash, zsh or fish)", shell)
	}
	_, err := io.WriteString(w, strings.ReplaceAll(s, "PROG", p.Name))
	return err
}

// CompleteCommand is the hidden command the scripts call.
const CompleteCommand = "__complete"

const bashScript = `# bash completion for PROG: source <(PROG completion bash)
_PROG_complete() {
	local IFS=$'\n'
	COMPREPLY=($(PROG __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _PROG_complete PROG
`

const zshScript = `#compdef PROG
# zsh completion for PROG: source <(PROG completion zsh)
_PROG_complete() {
	local -a candidates
	candidates=("${(@f)$(PROG __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	compadd -a candidates
}
compdef _PROG_complete PROG
`

const fishScript = `# fish completion for PROG: PROG completion fish | source
complete -c PROG -f -a '(PROG __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`
