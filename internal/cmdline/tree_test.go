package cmdline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// refusal is an error the other side answered with.
type refusal struct{}

func (refusal) Error() string { return "refused: 403" }
func (refusal) Refused() bool { return true }

// testProgram: a group with subcommands, a group that is a command with
// subcommands (audit), a single command, a raw one.
func testProgram(ran *[]string) *Program {
	leaf := func(name string, args []string, err error) *Leaf {
		return &Leaf{Name: name, Synopsis: name + " [flags]", Summary: name + " things", Args: args,
			Setup: func(c *Command) func(context.Context, []string) error {
				fleet := c.FS.String("fleet", "", "a `NAME`")
				out := c.FS.String("output", "table", "a `FORMAT`")
				c.Short("o", "output")
				c.FS.Bool("all", false, "all")
				return func(_ context.Context, args []string) error {
					*ran = append(*ran, strings.Join(append(append([]string{name}, args...), "fleet="+*fleet, "output="+*out), " "))
					return err
				}
			}}
	}
	list := leaf("list", nil, nil)
	p := &Program{Name: "x", Groups: []*Group{
		{Name: "agents", Summary: "agents", Leaves: []*Leaf{list, leaf("show", []string{"agent"}, nil), leaf("drop", []string{"agent"}, refusal{}),
			leaf("boom", nil, errors.New("no answer")), leaf("bad", nil, Usagef("want a thing"))}},
		{Name: "audit", Summary: "audit", Leaves: []*Leaf{leaf("list", nil, nil), leaf("verify", nil, nil)}, Default: list},
		{Name: "raw", Summary: "raw", Default: &Leaf{Raw: func(args []string, stdout, _ io.Writer) int {
			*ran = append(*ran, "raw "+strings.Join(args, " "))
			return 0
		}}},
	}}
	p.Lookup = func(kind string, words []string) []string {
		switch kind {
		case "agent":
			return []string{"0a", "0b", "1c"}
		case "flag:fleet":
			return []string{"edge", "core"}
		}
		return nil
	}
	return p
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		ran    string // what ran; "" for nothing
		stdout string // in stdout
		stderr string // in stderr
	}{
		{[]string{"agents", "list"}, ExitOK, "list fleet= output=table", "", ""},
		{[]string{"agents", "show", "--fleet", "edge", "0a", "-o", "json"}, ExitOK, "show 0a fleet=edge output=json", "", ""},
		{[]string{"audit", "--fleet", "edge"}, ExitOK, "list fleet=edge output=table", "", ""},
		{[]string{"audit"}, ExitOK, "list fleet= output=table", "", ""},
		{[]string{"audit", "verify"}, ExitOK, "verify fleet= output=table", "", ""},
		{[]string{"raw", "a", "--b"}, ExitOK, "raw a --b", "", ""},
		{[]string{"agents", "drop", "0a"}, ExitRefused, "drop 0a fleet= output=table", "", "x agents drop: refused: 403"},
		{[]string{"agents", "boom"}, ExitError, "boom fleet= output=table", "", "x agents boom: no answer"},
		{[]string{"agents", "bad"}, ExitUsage, "bad fleet= output=table", "", "x agents bad: want a thing\nusage: x bad [flags]"},
		{nil, ExitUsage, "", "", "usage: x <command>"},
		{[]string{"--help"}, ExitOK, "", "commands:\n  agents list|show|drop|boom|bad", ""},
		{[]string{"nope"}, ExitUsage, "", "", `x: unknown command "nope"`},
		{[]string{"agents"}, ExitUsage, "", "", "x agents: a subcommand is needed"},
		{[]string{"agents", "help"}, ExitOK, "", "usage: x agents <subcommand>", ""},
		{[]string{"audit", "--help"}, ExitOK, "", "usage: x audit <subcommand>", ""},
		{[]string{"agents", "nope"}, ExitUsage, "", "", `x agents: unknown subcommand "nope"`},
		{[]string{"agents", "list", "--bogus"}, ExitUsage, "", "", "x agents list: flag provided but not defined: -bogus"},
		{[]string{"agents", "list", "--help"}, ExitOK, "", "flags:\n  --all\n", ""},
		{[]string{"agents", "list", "-h"}, ExitOK, "", "  -o, --output FORMAT\n        a FORMAT (default table)", ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var ran []string
			var out, errb bytes.Buffer
			code := testProgram(&ran).Run(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.code, errb.String())
			}
			if got := strings.Join(ran, ";"); got != tc.ran {
				t.Errorf("ran %q, want %q", got, tc.ran)
			}
			if !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stdout %q stderr %q, want %q and %q", out.String(), errb.String(), tc.stdout, tc.stderr)
			}
		})
	}
}

func TestComplete(t *testing.T) {
	var ran []string
	p := testProgram(&ran)
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{""}, []string{"agents", "audit", "raw"}},
		{[]string{"a"}, []string{"agents", "audit"}},
		{[]string{"agents", ""}, []string{"bad", "boom", "drop", "list", "show"}},
		{[]string{"agents", "s"}, []string{"show"}},
		{[]string{"agents", "show", ""}, []string{"0a", "0b", "1c"}},
		{[]string{"agents", "show", "0"}, []string{"0a", "0b"}},
		{[]string{"agents", "show", "0a", ""}, nil},
		{[]string{"agents", "show", "--fleet", ""}, []string{"core", "edge"}},
		{[]string{"agents", "show", "--fleet", "e"}, []string{"edge"}},
		{[]string{"agents", "show", "--fleet", "edge", ""}, []string{"0a", "0b", "1c"}},
		{[]string{"agents", "show", "--all", ""}, []string{"0a", "0b", "1c"}},
		{[]string{"agents", "show", "--fleet=edge", "1"}, []string{"1c"}},
		{[]string{"agents", "show", "--"}, []string{"--all", "--fleet", "--output"}},
		{[]string{"agents", "show", "-o", ""}, nil},
		{[]string{"agents", "list", "--f"}, []string{"--fleet"}},
		{[]string{"audit", "--f"}, []string{"--fleet"}},
		{[]string{"audit", "v"}, []string{"verify"}},
		{[]string{"raw", ""}, nil},
		{[]string{"nope", ""}, nil},
	} {
		got := p.Complete(tc.words)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.words, got, tc.want)
		}
	}
}

func TestScriptsNameTheProgram(t *testing.T) {
	p := &Program{Name: "myprog"}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		var b bytes.Buffer
		if err := p.Script(&b, sh); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "PROG") || !strings.Contains(b.String(), "myprog __complete") {
			t.Errorf("%s:\n%s", sh, b.String())
		}
	}
	var u *UsageProblem
	if err := p.Script(io.Discard, "tcsh"); !errors.As(err, &u) {
		t.Fatalf("tcsh: %v", err)
	}
}
