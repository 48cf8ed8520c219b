package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
)

// labelFlags collects repeated --label key=value.
type labelFlags map[string]string

func (l labelFlags) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("label %q: want key=value", s)
	}
	l[k] = v
	return nil
}

const tokenUsage = `usage: myriarchd token <subcommand> [flags]

subcommands:
  create --name NAME [--label key=value]...   create an enrollment token (its secret is shown once)
  list [--json]                               list the tokens (never their secrets)
  revoke ID                                   revoke a token and disconnect its agents

Each subcommand prints its flags with --help.
`

func tokenCmd(args []string, stdout, stderr io.Writer) int {
	return subcommand("token", tokenUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"create": tokenCreate,
		"list":   tokenList,
		"revoke": tokenRevoke,
	}, args, stdout, stderr)
}

func tokenCreate(args []string, stdout, stderr io.Writer) int {
	c := newCommand("token create", "token create --name NAME [--label key=value]... [flags]",
		"Creates an enrollment token and prints it as JSON; its secret is shown this once.")
	client := clientFlags(c.fs)
	name := c.fs.String("name", "", "token name (required)")
	labels := labelFlags{}
	c.fs.Var(labels, "label", "label `KEY=VALUE` of the agents enrolling with it (repeatable)")
	if code, done := c.parse(args, stdout, stderr); done {
		return code
	}
	switch {
	case c.fs.NArg() > 0:
		return c.usageError(stderr, "unexpected argument %q", c.fs.Arg(0))
	case *name == "":
		return c.usageError(stderr, "--name is required")
	}
	var out map[string]any
	if _, ok := c.call(stderr, client, "POST", "/api/v1/tokens", map[string]any{"name": *name, "labels": map[string]string(labels)}, &out); !ok {
		return 1
	}
	return printJSON(stdout, out)
}

func tokenList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("token list", "token list [--json] [flags]", "Lists the enrollment tokens, revoked ones included, never their secrets.")
	client := clientFlags(c.fs)
	asJSON := c.fs.Bool("json", false, "print JSON")
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	var out struct {
		Tokens []struct {
			ID        string            `json:"id"`
			Name      string            `json:"name"`
			Labels    map[string]string `json:"labels"`
			CreatedAt string            `json:"createdAt"`
			RevokedAt string            `json:"revokedAt"`
		} `json:"tokens"`
	}
	if _, ok := c.call(stderr, client, "GET", "/api/v1/tokens", nil, &out); !ok {
		return 1
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tLABELS\tCREATED\tREVOKED")
	for _, t := range out.Tokens {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, joinLabels(t.Labels), t.CreatedAt, t.RevokedAt)
	}
	tw.Flush()
	return 0
}

func tokenRevoke(args []string, stdout, stderr io.Writer) int {
	c := newCommand("token revoke", "token revoke [flags] ID", "Revokes a token: agents enrolled with it are disconnected and refused from then on.")
	client := clientFlags(c.fs)
	if code, done := c.parse(args, stdout, stderr); done {
		return code
	}
	if c.fs.NArg() != 1 {
		return c.usageError(stderr, "want one token ID")
	}
	var out map[string]any
	if _, ok := c.call(stderr, client, "DELETE", "/api/v1/tokens/"+url.PathEscape(c.fs.Arg(0)), nil, &out); !ok {
		return 1
	}
	return printJSON(stdout, out)
}

func joinLabels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}
