package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
)

const usersUsage = `usage: myriarchd users <subcommand> [flags]

subcommands:
  create --name NAME --role ROLE [--fleet F]... [--password-stdin]   add a user (viewer, operator or admin)
  list [--json]                                                     list the users (never their passwords)
  update NAME [--role ROLE] [--fleet F]... [--all-fleets] [--password-stdin]
                                                                    change a user's role, scope or password
  delete NAME                                                       remove a user

A user signs in to the console with its name and password (at least 12
characters, read from standard input so it stays off the command line).
Each subcommand prints its flags with --help.
`

func usersCmd(args []string, stdout, stderr io.Writer) int {
	return subcommand("users", usersUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"create": usersCreate,
		"list":   usersList,
		"update": usersUpdate,
		"delete": usersDelete,
	}, args, stdout, stderr)
}

// fleetFlags collects repeated --fleet NAME.
type fleetFlags []string

func (f *fleetFlags) String() string     { return strings.Join(*f, ",") }
func (f *fleetFlags) Set(s string) error { *f = append(*f, s); return nil }

// grantFlags are what users create and apikeys create grant: a name, a
// role and the fleets it is scoped to.
type grantFlags struct {
	name, role *string
	fleets     fleetFlags
}

func addGrantFlags(fs *flag.FlagSet, what string) *grantFlags {
	g := &grantFlags{name: fs.String("name", "", what+" name (required)"), role: fs.String("role", "", "role: viewer, operator or admin (required)")}
	fs.Var(&g.fleets, "fleet", "scope the role to fleet `NAME` (repeatable)")
	return g
}

// body is the request's grant, or false when the name or role is missing.
func (g *grantFlags) body() (map[string]any, bool) {
	if *g.name == "" || *g.role == "" {
		return nil, false
	}
	body := map[string]any{"name": *g.name, "role": *g.role}
	if g.fleets != nil {
		body["fleets"] = []string(g.fleets)
	}
	return body, true
}

// stdin is what --password-stdin reads (tests replace it).
var stdin io.Reader = os.Stdin

// readPassword reads a password, the first line of standard input.
func readPassword() (string, error) {
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("reading the password from standard input: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func usersCreate(args []string, stdout, stderr io.Writer) int {
	c := newCommand("users create", "users create --name NAME --role ROLE [--fleet F]... [--password-stdin] [flags]",
		"Adds a user. Without --fleet its role holds on every fleet.")
	client := clientFlags(c.fs)
	grant := addGrantFlags(c.fs, "user")
	pwStdin := c.fs.Bool("password-stdin", false, "read the password from standard input")
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	body, ok := grant.body()
	if !ok {
		return c.usageError(stderr, "--name and --role are required")
	}
	if *pwStdin {
		pw, err := readPassword()
		if err != nil {
			fmt.Fprintf(stderr, "myriarchd users create: %v\n", err)
			return 1
		}
		body["password"] = pw
	}
	var out map[string]any
	if _, ok := c.call(stderr, client, "POST", "/api/v1/users", body, &out); !ok {
		return 1
	}
	return printJSON(stdout, out)
}

func usersList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("users list", "users list [--json] [flags]", "Lists the users, never their passwords.")
	client := clientFlags(c.fs)
	asJSON := c.fs.Bool("json", false, "print JSON")
	if code, done := c.parseFlags(args, stdout, stderr); done {
		return code
	}
	var out struct {
		Users []struct {
			Name        string   `json:"name"`
			Role        string   `json:"role"`
			Fleets      []string `json:"fleets"`
			HasPassword bool     `json:"hasPassword"`
			UpdatedAt   string   `json:"updatedAt"`
		} `json:"users"`
	}
	if _, ok := c.call(stderr, client, "GET", "/api/v1/users", nil, &out); !ok {
		return 1
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tFLEETS\tPASSWORD\tUPDATED")
	for _, u := range out.Users {
		pw := "no"
		if u.HasPassword {
			pw = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Name, u.Role, scopeText(u.Fleets), pw, u.UpdatedAt)
	}
	tw.Flush()
	return 0
}

// scopeText shows a scope: every fleet, or the fleets named.
func scopeText(fleets []string) string {
	if fleets == nil {
		return "(every fleet)"
	}
	return strings.Join(fleets, ",")
}

func usersUpdate(args []string, stdout, stderr io.Writer) int {
	c := newCommand("users update", "users update NAME [flags]", "Changes a user: only what a flag gives changes.")
	client := clientFlags(c.fs)
	role := c.fs.String("role", "", "new role: viewer, operator or admin")
	var fleets fleetFlags
	c.fs.Var(&fleets, "fleet", "scope the role to fleet `NAME` (repeatable; replaces the scope)")
	all := c.fs.Bool("all-fleets", false, "let the role hold on every fleet")
	pwStdin := c.fs.Bool("password-stdin", false, "read a new password from standard input")
	names, code, done := c.parseMixed(args, stdout, stderr)
	if done {
		return code
	}
	switch {
	case len(names) != 1:
		return c.usageError(stderr, "want one user NAME")
	case *all && fleets != nil:
		return c.usageError(stderr, "--fleet and --all-fleets exclude each other")
	}
	body := map[string]any{}
	if *role != "" {
		body["role"] = *role
	}
	switch {
	case *all:
		body["fleets"] = nil
	case fleets != nil:
		body["fleets"] = []string(fleets)
	}
	if *pwStdin {
		pw, err := readPassword()
		if err != nil {
			fmt.Fprintf(stderr, "myriarchd users update: %v\n", err)
			return 1
		}
		body["password"] = pw
	}
	if len(body) == 0 {
		return c.usageError(stderr, "nothing to change: give --role, --fleet, --all-fleets or --password-stdin")
	}
	var out map[string]any
	if _, ok := c.call(stderr, client, "PATCH", "/api/v1/users/"+url.PathEscape(names[0]), body, &out); !ok {
		return 1
	}
	return printJSON(stdout, out)
}

func usersDelete(args []string, stdout, stderr io.Writer) int {
	c := newCommand("users delete", "users delete NAME [flags]", "Removes a user; its console sessions end.")
	client := clientFlags(c.fs)
	names, code, done := c.parseMixed(args, stdout, stderr)
	if done {
		return code
	}
	if len(names) != 1 {
		return c.usageError(stderr, "want one user NAME")
	}
	var out map[string]any
	if _, ok := c.call(stderr, client, "DELETE", "/api/v1/users/"+url.PathEscape(names[0]), nil, &out); !ok {
		return 1
	}
	return printJSON(stdout, out)
}
