package admincli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/myriarch/myriarch/internal/adminapi"
	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/cmdline"
	"github.com/myriarch/myriarch/server/plan"
)

const estatePlanAbout = `Asks the server what the estate would change, without applying it: at Git
revision REV of the estate's repository, or without --revision the estate
directory as it is on disk now. Per fleet: the collectors whose
configuration would change, a unified diff for one collector per distinct
new configuration, the warnings and render errors it would bring, and the
collectors whose target version would change. It exits 1 when the
candidate does not load (every problem is printed), 3 when it is refused.`

// ErrPlanFails is the error of a plan whose candidate estate does not load.
var ErrPlanFails = errors.New("the candidate estate does not load")

func (c *Commands) estate() *cmdline.Group {
	return &cmdline.Group{Name: "estate", Summary: "the estate in force; reload it; what a change would do", Leaves: []*cmdline.Leaf{
		c.simple("estate", "show", "", "the revision in force and the last reload's problems",
			"Shows the estate in force: its revision, when it was loaded, and the last reload's problems and findings.", nil, "no argument",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				r, err := cl.API.GetEstateWithResponse(ctx)
				if err != nil {
					return answered{}, err
				}
				return answered{r.Body, func(tw *tabwriter.Writer) { estateTable(tw, r.JSON200) }}, nil
			}),
		c.simple("estate", "reload", "", "reload the estate (as SIGHUP does)",
			"Reloads the estate as SIGHUP does, and shows the estate now in force.", nil, "no argument",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				if _, err := cl.API.ReloadEstateWithResponse(ctx); err != nil {
					return answered{}, err
				}
				r, err := cl.API.GetEstateWithResponse(ctx)
				if err != nil {
					return answered{}, fmt.Errorf("reloaded, but %w", err)
				}
				return answered{r.Body, func(tw *tabwriter.Writer) { estateTable(tw, r.JSON200) }}, nil
			}),
		c.leaf("estate", "plan", "[--revision REV]", "what the estate would change, without applying it", estatePlanAbout, nil,
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				output := outputFlag(cmd)
				rev := cmd.FS.String("revision", "", "Git `REV` of the estate to plan (a commit, branch or tag); none: the directory as it is")
				return func(ctx context.Context, args []string) error {
					cl, err := begin(args, 0, "no argument", *output, client)
					if err != nil {
						return err
					}
					var body adminapi.PlanRequest
					if *rev != "" {
						body.Revision = rev
					}
					r, err := cl.API.PlanEstateWithResponse(ctx, body)
					if err != nil {
						return err
					}
					var p plan.Plan
					if err := json.Unmarshal(r.Body, &p); err != nil {
						return fmt.Errorf("the server's plan: %w", err)
					}
					if *output == FormatTable {
						printPlan(out(cmd), p)
					} else if err := show(out(cmd), *output, r.Body, nil); err != nil {
						return err
					}
					if !p.OK {
						return ErrPlanFails
					}
					return nil
				}
			}),
	}}
}

func estateTable(tw *tabwriter.Writer, s *adminapi.EstateStatus) {
	rev, loaded := "(none)", "-"
	if s.Revision != nil && *s.Revision != "" {
		rev = *s.Revision
	}
	if s.LoadedAt != nil {
		loaded = stamp(*s.LoadedAt)
	}
	fmt.Fprintf(tw, "revision\t%s\n", rev)
	fmt.Fprintf(tw, "loaded\t%s\n", loaded)
	fmt.Fprintf(tw, "problems\t%d\n", len(s.Errors))
	for _, e := range s.Errors {
		fmt.Fprintf(tw, "\t%s:%d: %s\n", e.File, e.Line, e.Message)
	}
	if s.Findings != nil {
		fmt.Fprintf(tw, "findings\t%d\n", len(*s.Findings))
	}
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
