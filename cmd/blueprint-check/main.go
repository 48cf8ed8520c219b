// Command blueprint-check loads a Blueprint estate from one or more source
// roots, prints what loaded and every finding, and exits 1 on load errors
// (2 with --strict when there are findings).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/blueprint"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// roots is a repeatable --root flag.
type roots []string

func (r *roots) String() string     { return strings.Join(*r, ",") }
func (r *roots) Set(v string) error { *r = append(*r, v); return nil }

// report is the --json output; field order and names are the contract.
type report struct {
	Errors   []loadError         `json:"errors"`
	Loaded   loaded              `json:"loaded"`
	Findings []blueprint.Finding `json:"findings"`
}

type loadError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

type loaded struct {
	Blueprints   []string `json:"blueprints"`
	Components   []string `json:"components"`
	Requirements []string `json:"requirements"`
}

const usage = `usage: blueprint-check --root DIR [--root DIR]... [--json] [--strict]
                       [--context-from-fleet NAME --admin URL]

Loads every Blueprint, shared Component and Requirement under the source
roots, prints what loaded and every finding. With --context-from-fleet,
also checks the fleet's Blueprint against the fleet's collectors as a
running myriarchd knows them: a reference that no member can resolve
today (none has the variable, and it has no constant alternative) is a
finding.

Exit status: 0 loaded (findings alone do not fail), 1 load errors,
2 findings with --strict, or a usage error.
`

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("blueprint-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	var rs roots
	fs.Var(&rs, "root", "source root containing a teams/ tree (repeatable)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	strict := fs.Bool("strict", false, "exit 2 when there are findings")
	fleet := fs.String("context-from-fleet", "", "check the fleet `NAME`'s Blueprint against its collectors' contexts, read from the admin API")
	client := adminclient.Flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "blueprint-check: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if len(rs) == 0 {
		fmt.Fprintln(stderr, "blueprint-check: at least one --root is required")
		fs.Usage()
		return 2
	}

	rep := report{Errors: []loadError{}, Findings: []blueprint.Finding{},
		Loaded: loaded{Blueprints: []string{}, Components: []string{}, Requirements: []string{}}}
	est, err := blueprint.Load(rs...)
	if err != nil {
		var les blueprint.LoadErrors
		if !errors.As(err, &les) {
			les = blueprint.LoadErrors{{Message: err.Error()}}
		}
		for _, e := range les {
			rep.Errors = append(rep.Errors, loadError{File: e.File, Line: e.Line, Message: e.Message})
		}
	} else {
		rep.Loaded = loaded{Blueprints: list(est.BlueprintIDs()), Components: list(est.ComponentIDs()), Requirements: list(est.RequirementIDs())}
		if f := est.Judge(); f != nil {
			rep.Findings = f
		}
		if *fleet != "" {
			fs, err := fleetFindings(est, *fleet, client)
			if err != nil {
				fmt.Fprintf(stderr, "blueprint-check: --context-from-fleet %s: %v\n", *fleet, err)
				return 1
			}
			rep.Findings = append(rep.Findings, fs...)
		}
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "blueprint-check: %v\n", err)
			return 1
		}
	} else {
		printText(stdout, rep)
	}
	switch {
	case len(rep.Errors) > 0:
		return 1
	case *strict && len(rep.Findings) > 0:
		return 2
	}
	return 0
}

// list keeps an empty list a list: the JSON contract prints [], never null.
func list[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

func printText(w io.Writer, rep report) {
	if len(rep.Errors) > 0 {
		for _, e := range rep.Errors {
			switch {
			case e.Line > 0:
				fmt.Fprintf(w, "%s:%d: %s\n", e.File, e.Line, e.Message)
			case e.File != "":
				fmt.Fprintf(w, "%s: %s\n", e.File, e.Message)
			default:
				fmt.Fprintln(w, e.Message)
			}
		}
		fmt.Fprintf(w, "load failed: %d error(s); nothing loaded\n", len(rep.Errors))
		return
	}
	l := rep.Loaded
	fmt.Fprintf(w, "loaded %d Blueprint(s), %d shared Component(s), %d Requirement(s)\n",
		len(l.Blueprints), len(l.Components), len(l.Requirements))
	list := func(title string, ids []string) {
		fmt.Fprintf(w, "%s:\n", title)
		for _, id := range ids {
			fmt.Fprintf(w, "  %s\n", id)
		}
	}
	list("blueprints", l.Blueprints)
	list("components", l.Components)
	list("requirements", l.Requirements)
	fmt.Fprintf(w, "%d finding(s)\n", len(rep.Findings))
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "  %s %s [%s] owner %s: %s\n", f.Kind, f.Blueprint, f.Lane, f.Owner, f.Message)
	}
}
