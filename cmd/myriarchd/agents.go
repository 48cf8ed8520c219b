package main

import (
	"github.com/myriarch/myriarch/internal/adminclient"

	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
)

type agentRow struct {
	InstanceUID string            `json:"instanceUid"`
	Kind        string            `json:"kind"`
	Online      bool              `json:"online"`
	Identifying map[string]string `json:"identifying"`
	Attributes  map[string]string `json:"attributes"`
	LastSeen    string            `json:"lastSeen"`
	Pairing     *struct {
		State string `json:"state"`
	} `json:"pairing"`
	Offer *struct {
		Version string `json:"version"`
		State   string `json:"state"`
	} `json:"offer"`
	Assignment *struct {
		SyncState string `json:"syncState"`
	} `json:"assignment"`
}

const agentsUsage = `usage: myriarchd agents <subcommand> [flags]

subcommands:
  list [--kind KIND] [--json]   list every agent: kind, version, host, pairing, offer, sync state
  show UID                      one agent as JSON, with its history

Each subcommand prints its flags with --help.
`

func agentsCmd(args []string, stdout, stderr io.Writer) int {
	return subcommand("agents", agentsUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"list": agentsList,
		"show": agentsShow,
	}, args, stdout, stderr)
}

func agentsList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("agents list", "agents list [--kind KIND] [--json] [flags]",
		"Lists every registered agent, online or not, a page of the admin API at a time.")
	client := clientFlags(c.fs)
	kind := c.fs.String("kind", "", "only agents of this `KIND`: collector, updater, bridge or unknown")
	asJSON := c.fs.Bool("json", false, "print JSON")
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	cl, err := client()
	if err != nil {
		fmt.Fprintln(stderr, "myriarchd agents list:", err)
		return 1
	}
	var rows []agentRow
	var docs []any
	err = eachAgentsPage(cl, *kind, func(raw []json.RawMessage) error {
		for _, r := range raw {
			if *asJSON {
				var v any
				if err := json.Unmarshal(r, &v); err != nil {
					return err
				}
				docs = append(docs, v)
				continue
			}
			var a agentRow
			if err := json.Unmarshal(r, &a); err != nil {
				return err
			}
			rows = append(rows, a)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, "myriarchd agents list:", err)
		return 1
	}
	if *asJSON {
		if docs == nil {
			docs = []any{}
		}
		return printJSON(stdout, map[string]any{"agents": docs})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE UID\tKIND\tONLINE\tSERVICE\tVERSION\tHOST\tPAIRING\tOFFER\tSYNC\tLAST SEEN")
	for _, a := range rows {
		pairing, offer, sync := "-", "-", "-"
		if a.Assignment != nil && a.Assignment.SyncState != "" {
			sync = a.Assignment.SyncState
		}
		if a.Pairing != nil {
			pairing = a.Pairing.State
		}
		if a.Offer != nil {
			offer = a.Offer.State
			if a.Offer.Version != "" {
				offer += " " + a.Offer.Version
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.InstanceUID, a.Kind, a.Online,
			a.Identifying["service.name"], a.Identifying["service.version"], a.Attributes["host.name"], pairing, offer, sync, a.LastSeen)
	}
	tw.Flush()
	return 0
}

func agentsShow(args []string, stdout, stderr io.Writer) int {
	c := newCommand("agents show", "agents show [flags] UID", "Prints one agent as the admin API shows it, with its event history.")
	client := clientFlags(c.fs)
	if code, done := c.parse(args, stdout, stderr); done {
		return code
	}
	if c.fs.NArg() != 1 {
		return c.usageError(stderr, "want one instance UID")
	}
	var v any
	if _, ok := c.call(stderr, client, "GET", "/api/v1/agents/"+url.PathEscape(c.fs.Arg(0)), nil, &v); !ok {
		return 1
	}
	return printJSON(stdout, v)
}

// agentsPageSize is how many agents `agents list` asks for per request, so
// no single answer of a large estate has to fit the client's timeout.
var agentsPageSize = 1000

// eachAgentsPage walks GET /api/v1/agents page by page (limit/after),
// handing each page's agents to fn in instance UID order.
func eachAgentsPage(c *adminclient.Client, kind string, fn func([]json.RawMessage) error) error {
	after := ""
	for {
		q := url.Values{"limit": {strconv.Itoa(agentsPageSize)}}
		if kind != "" {
			q.Set("kind", kind)
		}
		if after != "" {
			q.Set("after", after)
		}
		var page struct {
			Agents []json.RawMessage `json:"agents"`
			Next   string            `json:"next"`
		}
		if err := c.Do("GET", "/api/v1/agents?"+q.Encode(), nil, &page); err != nil {
			return err
		}
		if err := fn(page.Agents); err != nil {
			return err
		}
		if page.Next == "" {
			return nil
		}
		if page.Next == after {
			return fmt.Errorf("the server answered the page after %s with the same cursor", after)
		}
		after = page.Next
	}
}
