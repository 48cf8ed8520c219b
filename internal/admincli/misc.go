package admincli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/myriarch/myriarch/internal/adminapi"
	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/cmdline"
)

func (c *Commands) console() *cmdline.Group {
	return &cmdline.Group{Name: "console", Summary: "print a one-time login link to the browser console", Leaves: []*cmdline.Leaf{
		c.leaf("console", "link", "", "print a one-time login link to the browser console (valid 15 minutes)",
			"Prints a one-time login link to the console; the secret is in the URL's fragment, which browsers\n"+
				"never send to a server. The console is served on the admin listener at /.", nil,
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				return func(ctx context.Context, args []string) error {
					cl, err := begin(args, 0, "no argument", "", client)
					if err != nil {
						return err
					}
					r, err := cl.API.CreateConsoleLinkWithResponse(ctx)
					if err != nil {
						return err
					}
					fmt.Fprintln(cmd.Stdout, cl.Base()+r.JSON201.Path)
					fmt.Fprintf(cmd.Stderr, "one-time login link, valid until %s\n", r.JSON201.ExpiresAt.Local().Format(time.RFC3339))
					return nil
				}
			}),
	}}
}

func (c *Commands) pairings() *cmdline.Group {
	return &cmdline.Group{Name: "pairings", Summary: "which updater looks after which collector", Leaves: []*cmdline.Leaf{
		c.leaf("pairings", "list", "[--state STATE]", "every collector's and updater's pairing",
			"Lists the pairings of collectors and updaters: linked, ambiguous, unpaired, and why.", nil,
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				output := outputFlag(cmd)
				state := cmd.FS.String("state", "", "only pairings in this `STATE`")
				return func(ctx context.Context, args []string) error {
					cl, err := begin(args, 0, "no argument", "", client)
					if err != nil {
						return err
					}
					var p adminapi.ListPairingsParams
					if *state != "" {
						s := adminapi.ListPairingsParamsState(*state)
						p.State = &s
					}
					r, err := cl.API.ListPairingsWithResponse(ctx, &p)
					if err != nil {
						return err
					}
					return show(out(cmd), *output, r.Body, func(tw *tabwriter.Writer) {
						fmt.Fprintln(tw, "AGENT\tKIND\tSTATE\tPAIRED WITH\tCLAIMANTS / REASON")
						for _, col := range r.JSON200.Collectors {
							fmt.Fprintf(tw, "%s\tcollector\t%s\t%s\t%s\n", col.InstanceUid, col.State, derefOrDash(col.Updater), orDash(fmt.Sprint(len(col.Claimants))))
						}
						for _, u := range r.JSON200.Updaters {
							fmt.Fprintf(tw, "%s\tupdater\t%s\t%s\t%s\n", u.InstanceUid, u.State, derefOrDash(u.Collector), orDash(string(u.Reason)))
						}
					})
				}
			}),
	}}
}

func (c *Commands) notifications() *cmdline.Group {
	return &cmdline.Group{Name: "notifications", Summary: "what was sent to the webhooks, and why not", Leaves: []*cmdline.Leaf{
		c.leaf("notifications", "deliveries", "[--webhook NAME] [--failed] [--pending] [--limit N]", "the webhooks' deliveries, newest first",
			"Lists the notifications' deliveries: each webhook body, its attempts, and its last error.", nil,
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				output := outputFlag(cmd)
				webhook := cmd.FS.String("webhook", "", "only deliveries to the webhook `NAME`")
				failed := cmd.FS.Bool("failed", false, "only deliveries whose last attempt failed")
				pending := cmd.FS.Bool("pending", false, "only deliveries still to be made")
				limit := cmd.FS.Int("limit", 0, "at most `N` deliveries; 0: the server's default")
				return func(ctx context.Context, args []string) error {
					cl, err := begin(args, 0, "no argument", "", client)
					if err != nil {
						return err
					}
					var p adminapi.ListNotificationDeliveriesParams
					if *webhook != "" {
						p.Webhook = webhook
					}
					if *failed {
						p.Failed = failed
					}
					if *pending {
						p.Pending = pending
					}
					if *limit != 0 {
						p.Limit = limit
					}
					r, err := cl.API.ListNotificationDeliveriesWithResponse(ctx, &p)
					if err != nil {
						return err
					}
					return show(out(cmd), *output, r.Body, func(tw *tabwriter.Writer) {
						fmt.Fprintln(tw, "ID\tWEBHOOK\tEVENT\tFLEET\tSTATE\tATTEMPTS\tCREATED\tLAST ERROR")
						for _, d := range r.JSON200.Deliveries {
							fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.Id, d.Webhook, d.Event, orDash(d.Fleet), d.State, d.Attempts,
								stamp(d.Created), cell(d.LastError, 80))
						}
					})
				}
			}),
	}}
}

// single is a group that is one command of no arguments printing one
// answer ("whoami").
func (c *Commands) single(name, summary, about string, call func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error)) *cmdline.Group {
	l := c.simple(name, "", "", summary, about, nil, "no argument", call)
	l.Synopsis = name + " [flags]"
	return &cmdline.Group{Name: name, Summary: summary, Default: l}
}

// server are the commands that read the server's own state.
func (c *Commands) server() []*cmdline.Group {
	return []*cmdline.Group{
		c.single("whoami", "who the credential in use is: name, role, fleets", "Shows the principal the credential in use stands for.",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				return rawOf(cl.API.WhoamiWithResponse(ctx))
			}),
		c.single("summary", "counts of agents, versions, offers and configurations", "Shows the estate's counts: agents by kind and state, collector versions, offers, configurations and warnings.",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				return rawOf(cl.API.GetSummaryWithResponse(ctx))
			}),
		c.single("cluster", "this instance, the leader and the estate revision", "Shows the instance answering, which instance leads, and whether they run the same estate revision.",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				return rawOf(cl.API.GetClusterWithResponse(ctx))
			}),
		c.single("ready", "whether the server is ready, and what it misses", "Shows whether the server is ready to serve agents and operators (GET /readyz); exits 3 when it is not.",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				return rawOf(cl.API.ReadyzWithResponse(ctx))
			}),
		c.single("openapi", "the admin API's OpenAPI document", "Prints the OpenAPI 3.1 document of the admin API the server runs.",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				return rawOf(cl.API.GetOpenAPIWithResponse(ctx))
			}),
	}
}

func derefOrDash(s *string) string {
	if s == nil {
		return "-"
	}
	return orDash(*s)
}
