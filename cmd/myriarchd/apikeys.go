package main

import (
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
)

const apikeysUsage = `usage: myriarchd apikeys <subcommand> [flags]

subcommands:
  create --name NAME --role ROLE [--fleet F]... [--expires-in D]   make an API key (its secret is shown once)
  list [--json]                                                   list the keys (never their secrets)
  delete ID                                                       revoke a key, at once on every instance

A script uses a key as its bearer token (MYRIARCH_ADMIN_TOKEN=myrkey_…).
A key never carries more than the role of whoever creates it.
Each subcommand prints its flags with --help.
`

func apikeysCmd(args []string, stdout, stderr io.Writer) int {
	return subcommand("apikeys", apikeysUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"create": apikeysCreate,
		"list":   apikeysList,
		"delete": apikeysDelete,
	}, args, stdout, stderr)
}

func apikeysCreate(args []string, stdout, stderr io.Writer) int {
	c := newCommand("apikeys create", "apikeys create --name NAME --role ROLE [--fleet F]... [--expires-in D] [flags]",
		"Makes an API key and prints it as JSON; its secret is shown this once.")
	client := clientFlags(c.fs)
	grant := addGrantFlags(c.fs, "key")
	expires := c.fs.String("expires-in", "", "the key expires after this `DURATION` (e.g. 90d, 720h); default never")
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	body, ok := grant.body()
	if !ok {
		return c.usageError(stderr, "--name and --role are required")
	}
	if *expires != "" {
		body["expiresIn"] = *expires
	}
	var out map[string]any
	if _, ok := c.call(stderr, client, "POST", "/api/v1/apikeys", body, &out); !ok {
		return 1
	}
	return printJSON(stdout, out)
}

func apikeysList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("apikeys list", "apikeys list [--json] [flags]", "Lists the API keys, revoked ones included, never their secrets.")
	client := clientFlags(c.fs)
	asJSON := c.fs.Bool("json", false, "print JSON")
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	var out struct {
		Keys []struct {
			ID        string   `json:"id"`
			Name      string   `json:"name"`
			Role      string   `json:"role"`
			Fleets    []string `json:"fleets"`
			ExpiresAt string   `json:"expiresAt"`
			CreatedBy string   `json:"createdBy"`
			RevokedAt string   `json:"revokedAt"`
		} `json:"apikeys"`
	}
	if _, ok := c.call(stderr, client, "GET", "/api/v1/apikeys", nil, &out); !ok {
		return 1
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tROLE\tFLEETS\tEXPIRES\tCREATED BY\tREVOKED")
	for _, k := range out.Keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Role, scopeText(k.Fleets), orDash(k.ExpiresAt), k.CreatedBy, orDash(k.RevokedAt))
	}
	tw.Flush()
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func apikeysDelete(args []string, stdout, stderr io.Writer) int {
	c := newCommand("apikeys delete", "apikeys delete ID [flags]", "Revokes an API key: refused from then on, on every instance.")
	client := clientFlags(c.fs)
	ids, code, done := c.parseMixed(args, stdout, stderr)
	if done {
		return code
	}
	if len(ids) != 1 {
		return c.usageError(stderr, "want one key ID")
	}
	var out map[string]any
	if _, ok := c.call(stderr, client, "DELETE", "/api/v1/apikeys/"+url.PathEscape(ids[0]), nil, &out); !ok {
		return 1
	}
	return printJSON(stdout, out)
}
