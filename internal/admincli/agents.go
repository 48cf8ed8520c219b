package admincli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/myriarch/myriarch/internal/adminapi"
	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/cmdline"
)

// AgentsPageSize is how many agents `agents list` asks for per request, so
// no single answer of a large estate has to fit the client's timeout.
var AgentsPageSize = 1000

func (c *Commands) agents() *cmdline.Group {
	uid := []string{"agent"}
	return &cmdline.Group{Name: "agents", Summary: "show agents, their configuration and context; retry or forget them", Leaves: []*cmdline.Leaf{
		c.leaf("agents", "list", "[--kind KIND]", "list every agent: kind, version, host, pairing, offer, sync state",
			"Lists every registered agent, online or not, a page of the admin API at a time.", nil,
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				output := outputFlag(cmd)
				kind := cmd.FS.String("kind", "", "only agents of this `KIND`: collector, updater, bridge or unknown")
				return func(ctx context.Context, args []string) error {
					cl, err := begin(args, 0, "no argument", *output, client)
					if err != nil {
						return err
					}
					return listAgents(ctx, cl, *kind, *output, out(cmd))
				}
			}),
		c.simple("agents", "show", "UID", "one agent, with its history", "Shows one agent as the admin API does, with its event history.",
			uid, "one instance UID",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				r, err := cl.API.GetAgentWithResponse(ctx, args[0])
				return rawOf(r, err)
			}),
		c.leaf("agents", "config", "UID [--hash HASH]", "the configuration a collector is assigned (YAML)",
			"Prints the configuration rendered for a collector: the one assigned, or with --hash one it was\n"+
				"sent before (assigned, desired, failed or reported). Needs the operator role: a configuration\n"+
				"holds the exporters' credentials.", uid,
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				hash := cmd.FS.String("hash", "", "the configuration of this `HASH` instead of the assigned one")
				return func(ctx context.Context, args []string) error {
					cl, err := begin(args, 1, "one instance UID", "", client)
					if err != nil {
						return err
					}
					var p adminapi.GetAgentConfigParams
					if *hash != "" {
						p.Hash = hash
					}
					// The answer as it is: a YAML document to print, not
					// to parse.
					resp, err := cl.API.GetAgentConfig(ctx, args[0], &p)
					if err != nil {
						return err
					}
					defer resp.Body.Close()
					_, err = io.Copy(out(cmd), resp.Body)
					return err
				}
			}),
		c.simple("agents", "context", "UID", "what a collector's configuration is rendered from",
			"Shows a collector's render context: its attributes, labels and the providers its updater reports\n"+
				"(needs the operator role: the context carries the environment variables its updater publishes).",
			uid, "one instance UID",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				r, err := cl.API.GetAgentContextWithResponse(ctx, args[0])
				return rawOf(r, err)
			}),
		c.simple("agents", "retry-offer", "UID", "offer a collector its fleet's version again after a failure",
			"Clears a collector's failed install so that its fleet's version is offered again.", uid, "one instance UID",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				r, err := cl.API.RetryAgentOfferWithResponse(ctx, args[0])
				return rawOf(r, err)
			}),
		c.simple("agents", "retry-config", "UID", "send a collector its configuration again after a failure",
			"Clears a collector's failed configuration so that its assigned configuration is sent again.", uid, "one instance UID",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				r, err := cl.API.RetryAgentConfigWithResponse(ctx, args[0])
				return rawOf(r, err)
			}),
		c.simple("agents", "forget", "UID", "remove an offline agent and its history",
			"Removes an offline agent with its history, as pruning does, on every instance; an agent that\n"+
				"comes back registers anew. An online agent is refused (exit 3).", uid, "one instance UID",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				return rawOf(cl.API.ForgetAgentWithResponse(ctx, args[0]))
			}),
	}}
}

// listAgents walks GET /api/v1/agents page by page (limit/after): a table
// aligned a page at a time, or every agent in one JSON or YAML document
// as one answer would hold them.
func listAgents(ctx context.Context, cl *adminclient.Client, kind, format string, w io.Writer) error {
	limit := AgentsPageSize
	p := adminapi.ListAgentsParams{Limit: &limit}
	if kind != "" {
		k := adminapi.ListAgentsParamsKind(kind)
		p.Kind = &k
	}
	var all []json.RawMessage
	first := true
	for {
		r, err := cl.API.ListAgentsWithResponse(ctx, &p)
		if err != nil {
			return err
		}
		if format != FormatTable {
			var page struct {
				Agents []json.RawMessage `json:"agents"`
			}
			if err := json.Unmarshal(r.Body, &page); err != nil {
				return fmt.Errorf("the server's answer: %w", err)
			}
			all = append(all, page.Agents...)
		} else {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			if first {
				fmt.Fprintln(tw, "INSTANCE UID\tKIND\tONLINE\tSERVICE\tVERSION\tHOST\tPAIRING\tOFFER\tSYNC\tLAST SEEN")
			}
			for _, a := range r.JSON200.Agents {
				agentRow(tw, a)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		first = false
		next := r.JSON200.Next
		if next == nil {
			break
		}
		if p.After != nil && *p.After == *next {
			return fmt.Errorf("the server answered the page after %s with the same cursor", next)
		}
		p.After = next
	}
	if format == FormatTable {
		return nil
	}
	if all == nil {
		all = []json.RawMessage{}
	}
	doc, err := json.Marshal(map[string]any{"agents": all})
	if err != nil {
		return err
	}
	return show(w, format, doc, nil)
}

func agentRow(tw *tabwriter.Writer, a adminapi.Agent) {
	pairing, offer, sync := "-", "-", "-"
	if a.Assignment != nil && a.Assignment.SyncState != "" {
		sync = string(a.Assignment.SyncState)
	}
	if a.Pairing != nil {
		if p, err := a.Pairing.AsCollectorPairing(); err == nil && p.State != "" {
			pairing = string(p.State)
		}
	}
	if a.Offer != nil {
		offer = string(a.Offer.State)
		if a.Offer.Version != "" {
			offer += " " + a.Offer.Version
		}
	}
	fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.InstanceUid, a.Kind, a.Online,
		orDash(a.Identifying["service.name"]), orDash(a.Identifying["service.version"]), orDash(a.Attributes["host.name"]),
		pairing, offer, sync, stamp(a.LastSeen))
}
