package admincli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/myriarch/myriarch/internal/adminapi"
	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/cmdline"
)

func (c *Commands) fleets() *cmdline.Group {
	fleet := []string{"fleet"}
	return &cmdline.Group{Name: "fleets", Summary: "fleets and their rollouts: pause, resume, retry", Leaves: []*cmdline.Leaf{
		c.simple("fleets", "list", "", "every fleet: target version, rollouts' state and progress",
			"Lists the estate's fleets with their package and configuration rollouts.", nil, "no argument",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				r, err := cl.API.ListFleetsWithResponse(ctx)
				if err != nil {
					return answered{}, err
				}
				return answered{r.Body, func(tw *tabwriter.Writer) {
					fmt.Fprintln(tw, "NAME\tPACKAGE\tVERSION\tROLLOUT\tUP TO DATE\tFAILED\tBLUEPRINT\tCONFIG\tIN SYNC\tCONFIG FAILED")
					for _, f := range r.JSON200.Fleets {
						fleetRow(tw, f)
					}
				}}, nil
			}),
		c.simple("fleets", "show", "NAME", "one fleet with its waves",
			"Shows one fleet as the fleets list has it: selector, target version, and each rollout's waves.", fleet, "one fleet NAME",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				r, err := cl.API.ListFleetsWithResponse(ctx)
				if err != nil {
					return answered{}, err
				}
				var all struct {
					Fleets []json.RawMessage `json:"fleets"`
				}
				if err := json.Unmarshal(r.Body, &all); err != nil {
					return answered{}, fmt.Errorf("the server's answer: %w", err)
				}
				for i, f := range r.JSON200.Fleets {
					if f.Name == args[0] && i < len(all.Fleets) {
						return answered{all.Fleets[i], func(tw *tabwriter.Writer) { fleetDetail(tw, f) }}, nil
					}
				}
				return answered{}, &adminclient.StatusError{Method: "GET", Path: "/api/v1/fleets", Code: 404, Status: "404 Not Found",
					Message: fmt.Sprintf("no fleet %q in the estate", args[0])}
			}),
		c.fleetOp("pause", "pause the fleet's rollouts (package and configuration)",
			"Pauses the fleet's rollouts: no new version or configuration is offered until it is resumed.",
			func(ctx context.Context, cl *adminclient.Client, name string) (any, error) {
				return cl.API.PauseFleetWithResponse(ctx, name)
			}),
		c.fleetOp("resume", "resume the fleet's rollouts",
			"Resumes the fleet's rollouts, paused by an operator or by their failure budget.",
			func(ctx context.Context, cl *adminclient.Client, name string) (any, error) {
				return cl.API.ResumeFleetWithResponse(ctx, name)
			}),
		c.fleetOp("retry-offers", "offer the fleet's version again to its failed collectors",
			"Clears the failed installs of the fleet's collectors so that its version is offered to them again.",
			func(ctx context.Context, cl *adminclient.Client, name string) (any, error) {
				return cl.API.RetryFleetOffersWithResponse(ctx, name)
			}),
		c.fleetOp("retry-configs", "send the fleet's configuration again to its failed collectors",
			"Clears the failed configurations of the fleet's collectors so that theirs is sent again.",
			func(ctx context.Context, cl *adminclient.Client, name string) (any, error) {
				return cl.API.RetryFleetConfigsWithResponse(ctx, name)
			}),
		c.simple("fleets", "variables", "NAME", "the variables the fleet's collectors' contexts hold",
			"Shows, for the fleet's Blueprint, how many of its collectors have each variable in their render context.", fleet, "one fleet NAME",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				r, err := cl.API.GetFleetVariablesWithResponse(ctx, args[0])
				if err != nil {
					return answered{}, err
				}
				return answered{r.Body, func(tw *tabwriter.Writer) {
					fmt.Fprintf(tw, "VARIABLE\tCOLLECTORS (of %d, blueprint %s)\n", r.JSON200.Members, r.JSON200.Blueprint)
					for _, k := range slices.Sorted(maps.Keys(r.JSON200.Variables)) {
						fmt.Fprintf(tw, "%s\t%d\n", k, r.JSON200.Variables[k])
					}
				}}, nil
			}),
	}}
}

// fleetOp is a change to one fleet's rollouts.
func (c *Commands) fleetOp(name, summary, about string, call func(ctx context.Context, cl *adminclient.Client, fleet string) (any, error)) *cmdline.Leaf {
	return c.simple("fleets", name, "NAME", summary, about+" Audited; needs the operator role on the fleet.", []string{"fleet"}, "one fleet NAME",
		func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
			return rawOf(call(ctx, cl, args[0]))
		})
}

func fleetRow(tw *tabwriter.Writer, f adminapi.Fleet) {
	upToDate, failed := 0, 0
	for _, w := range f.Rollout.Waves {
		upToDate += w.UpToDate
		failed += w.Failed
	}
	bp, cstate, inSync, cfailed := "-", "-", "-", "-"
	if f.Config != nil {
		bp, cstate = f.Config.Blueprint, string(f.Config.State)
		n, nf := 0, 0
		for _, w := range f.Config.Waves {
			n += w.InSync
			nf += w.Failed
		}
		inSync, cfailed = fmt.Sprint(n), fmt.Sprint(nf)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", f.Name, orDash(f.Package), orDash(f.TargetVersion), f.Rollout.State,
		upToDate, failed, bp, cstate, inSync, cfailed)
}

func fleetDetail(tw *tabwriter.Writer, f adminapi.Fleet) {
	sel := make([]string, 0, len(f.Selector))
	for _, k := range slices.Sorted(maps.Keys(f.Selector)) {
		sel = append(sel, k+"="+f.Selector[k])
	}
	fmt.Fprintf(tw, "name\t%s\n", f.Name)
	fmt.Fprintf(tw, "selector\t%s\n", orDash(strings.Join(sel, ",")))
	fmt.Fprintf(tw, "package\t%s %s\n", orDash(f.Package), orDash(f.TargetVersion))
	fmt.Fprintf(tw, "rollout\t%s, %d failures\n", f.Rollout.State, f.Rollout.Failures)
	for _, w := range f.Rollout.Waves {
		fmt.Fprintf(tw, "  wave %s\t%d of %d up to date, %d failed, open %v\n", w.Wave, w.UpToDate, w.Total, w.Failed, w.Open)
	}
	if f.Config != nil {
		fmt.Fprintf(tw, "configuration\tblueprint %s, %s, %d failures\n", f.Config.Blueprint, f.Config.State, f.Config.Failures)
		for _, w := range f.Config.Waves {
			fmt.Fprintf(tw, "  wave %s\t%d of %d in sync, %d failed, open %v\n", w.Wave, w.InSync, w.Total, w.Failed, w.Open)
		}
	}
}
