package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
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

func tokenCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: myriarchd token create --name NAME [--label k=v]... | list | revoke ID")
		return 2
	}
	fs := flag.NewFlagSet("token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := clientFlags(fs)
	name := fs.String("name", "", "token name (create)")
	labels := labelFlags{}
	fs.Var(labels, "label", "label key=value (create; repeatable)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	c, err := client()
	if err != nil {
		fmt.Fprintln(stderr, "myriarchd token:", err)
		return 1
	}
	switch args[0] {
	case "create":
		var out map[string]any
		if err := c.do("POST", "/api/v1/tokens", map[string]any{"name": *name, "labels": map[string]string(labels)}, &out); err != nil {
			fmt.Fprintln(stderr, "myriarchd token create:", err)
			return 1
		}
		return printJSON(stdout, out)
	case "list":
		var out struct {
			Tokens []struct {
				ID        string            `json:"id"`
				Name      string            `json:"name"`
				Labels    map[string]string `json:"labels"`
				CreatedAt string            `json:"createdAt"`
				RevokedAt string            `json:"revokedAt"`
			} `json:"tokens"`
		}
		if err := c.do("GET", "/api/v1/tokens", nil, &out); err != nil {
			fmt.Fprintln(stderr, "myriarchd token list:", err)
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
	case "revoke":
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "usage: myriarchd token revoke ID")
			return 2
		}
		var out map[string]any
		if err := c.do("DELETE", "/api/v1/tokens/"+fs.Arg(0), nil, &out); err != nil {
			fmt.Fprintln(stderr, "myriarchd token revoke:", err)
			return 1
		}
		return printJSON(stdout, out)
	default:
		fmt.Fprintf(stderr, "myriarchd token: unknown subcommand %q\n", args[0])
		return 2
	}
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
