package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/myriarch/myriarch/server/plan"
)

const estateUsage = `usage: myriarchd estate <subcommand> [flags]

subcommands:
  plan [--revision REV] [--json]   what the estate would change, without applying it
  reload                           reload the estate (as SIGHUP does)

Each subcommand prints its flags with --help.
`

func estateCmd(args []string, stdout, stderr io.Writer) int {
	return subcommand("estate", estateUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"plan":   estatePlan,
		"reload": estateReload,
	}, args, stdout, stderr)
}

const estatePlanAbout = `Asks the server what the estate would change, without applying it: at Git
revision REV of the estate's repository, or without --revision the estate
directory as it is on disk now. Per fleet: the collectors whose
configuration would change, a unified diff for one collector per distinct
new configuration, the warnings and render errors it would bring, and the
collectors whose target version would change. It exits 1 when the
candidate does not load (every problem is printed) or is refused.`

func estatePlan(args []string, stdout, stderr io.Writer) int {
	c := newCommand("estate plan", "estate plan [--revision REV] [--json] [flags]", estatePlanAbout)
	client := clientFlags(c.fs)
	rev := c.fs.String("revision", "", "Git `REV` of the estate to plan (a commit, branch or tag); none: the directory as it is")
	asJSON := c.fs.Bool("json", false, "print the plan as the API answers it")
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	var body any
	if *rev != "" {
		body = map[string]string{"revision": *rev}
	}
	var p plan.Plan
	if _, ok := c.call(stderr, client, "POST", "/api/v1/estate/plan", body, &p); !ok {
		return 1
	}
	if *asJSON {
		printJSON(stdout, p)
	} else {
		printPlan(stdout, p)
	}
	if !p.OK {
		return 1
	}
	return 0
}

// printPlan writes a plan for a person: what it is of, a summary, then
// each fleet with something to say.
func printPlan(w io.Writer, p plan.Plan) {
	fmt.Fprintf(w, "Plan of %s against %s\n", revisionText(p.Candidate, p.Source), revisionText(p.Current, ""))
	if !p.OK {
		fmt.Fprintf(w, "\nThe estate does not load (%d problems); nothing would change:\n", len(p.Errors))
		for _, e := range p.Errors {
			fmt.Fprintf(w, "  %s:%d: %s\n", e.File, e.Line, e.Message)
		}
		return
	}
	s := p.Summary
	fmt.Fprintf(w, "\n%d collectors: %d to change, %d new warnings, %d render errors, %d target version changes\n",
		s.Collectors, s.Changed, s.Warnings, s.RenderErrors, s.VersionChanges)
	for _, f := range p.Fleets {
		if len(f.Changed) == 0 && len(f.Warnings) == 0 && len(f.Errors) == 0 && f.Version == nil {
			continue
		}
		fmt.Fprintf(w, "\nfleet %s", f.Name)
		if f.Blueprint != "" {
			fmt.Fprintf(w, " (blueprint %s)", f.Blueprint)
		}
		fmt.Fprintf(w, ": %d of %d collectors change\n", len(f.Changed), f.Collectors)
		if v := f.Version; v != nil {
			fmt.Fprintf(w, "  target version %s → %s for %d collectors\n", orNone(v.From), orNone(v.To), v.Collectors)
		}
		for _, b := range f.Bodies {
			fmt.Fprintf(w, "  configuration %.12s for %d collectors, e.g. %s", b.Hash, b.Collectors, b.Representative)
			if b.DiffOmitted != "" {
				fmt.Fprintf(w, " (no diff: %s)\n", b.DiffOmitted)
				continue
			}
			fmt.Fprintln(w, ":")
			for _, l := range strings.SplitAfter(b.Diff, "\n") {
				if l != "" {
					fmt.Fprint(w, "    ", l)
				}
			}
		}
		if f.BodiesWithoutDiff > 0 {
			fmt.Fprintf(w, "  %d more distinct configurations, not diffed\n", f.BodiesWithoutDiff)
		}
		for _, x := range f.Warnings {
			fmt.Fprintf(w, "  warning %s: %s\n", x.Agent, x.Warning)
		}
		for _, x := range f.Errors {
			fmt.Fprintf(w, "  render error %s: %s (it keeps its configuration)\n", x.Agent, x.Error)
		}
	}
	if len(p.Unassigned) > 0 {
		fmt.Fprintf(w, "\n%d collectors would have no configuration any more\n", len(p.Unassigned))
	}
	for _, f := range p.Findings {
		fmt.Fprintf(w, "finding: %s\n", f)
	}
}

func revisionText(r plan.Revision, source string) string {
	switch {
	case r.Revision == "":
		return "no estate"
	case source == "directory":
		return "the estate directory (" + r.Revision + ")"
	case r.Author != "":
		return r.Revision + " (commit by " + r.Author + ")"
	}
	return r.Revision
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func estateReload(args []string, stdout, stderr io.Writer) int {
	c := newCommand("estate reload", "estate reload [flags]", "Reloads the estate as SIGHUP does, and prints the revision now in force.")
	client := clientFlags(c.fs)
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	cl, ok := c.call(stderr, client, "POST", "/api/v1/estate/reload", nil, nil)
	if !ok {
		return 1
	}
	var status map[string]any
	if err := cl.Do("GET", "/api/v1/estate", nil, &status); err != nil {
		fmt.Fprintf(stderr, "myriarchd estate reload: reloaded, but %v\n", err)
		return 1
	}
	return printJSON(stdout, status)
}
