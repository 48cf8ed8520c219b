package admincli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/myriarch/myriarch/internal/adminapi"
	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/cmdline"
)

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
	g := &grantFlags{name: fs.String("name", "", what+" `NAME` (required)"), role: fs.String("role", "", "`ROLE`: viewer, operator or admin (required)")}
	fs.Var(&g.fleets, "fleet", "scope the role to fleet `NAME` (repeatable)")
	return g
}

func (g *grantFlags) check() error {
	if *g.name == "" || *g.role == "" {
		return cmdline.Usagef("--name and --role are required")
	}
	return nil
}

func (g *grantFlags) scope() *[]string {
	if g.fleets == nil {
		return nil
	}
	f := []string(g.fleets)
	return &f
}

// readPassword reads a password, the first line of r.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("reading the password from standard input: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// scopeText shows a scope: every fleet, or the fleets named.
func scopeText(fleets *[]string) string {
	if fleets == nil {
		return "(every fleet)"
	}
	return strings.Join(*fleets, ",")
}

func (c *Commands) users() *cmdline.Group {
	return &cmdline.Group{Name: "users", Summary: "manage the users of the admin API and console", Leaves: []*cmdline.Leaf{
		c.leaf("users", "create", "--name NAME --role ROLE [--fleet F]... [--password-stdin]", "add a user (viewer, operator or admin)",
			"Adds a user. Without --fleet its role holds on every fleet. A user signs in to the console with its\n"+
				"name and password (at least 12 characters, read from standard input so it stays off the command line).", nil,
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				output := outputFlag(cmd)
				grant := addGrantFlags(cmd.FS, "user")
				pwStdin := cmd.FS.Bool("password-stdin", false, "read the password from standard input")
				return func(ctx context.Context, args []string) error {
					if err := wantArgs(args, 0, "no argument"); err != nil {
						return err
					}
					if err := grant.check(); err != nil {
						return err
					}
					body := adminapi.UserRequest{Name: *grant.name, Role: adminapi.Role(*grant.role), Fleets: grant.scope()}
					if *pwStdin {
						pw, err := readPassword(cmd.Stdin)
						if err != nil {
							return err
						}
						body.Password = &pw
					}
					cl, err := client()
					if err != nil {
						return err
					}
					r, err := cl.API.CreateUserWithResponse(ctx, body)
					if err != nil {
						return err
					}
					return show(out(cmd), *output, r.Body, nil)
				}
			}),
		c.simple("users", "list", "", "list the users (never their passwords)", "Lists the users, never their passwords.", nil, "no argument",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				r, err := cl.API.ListUsersWithResponse(ctx)
				if err != nil {
					return answered{}, err
				}
				return answered{r.Body, func(tw *tabwriter.Writer) {
					fmt.Fprintln(tw, "NAME\tROLE\tFLEETS\tPASSWORD\tUPDATED")
					for _, u := range r.JSON200.Users {
						pw := "no"
						if u.HasPassword {
							pw = "yes"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Name, u.Role, scopeText(u.Fleets), pw, stamp(u.UpdatedAt))
					}
				}}, nil
			}),
		c.leaf("users", "update", "NAME [--role ROLE] [--fleet F]... [--all-fleets] [--password-stdin]", "change a user's role, scope or password",
			"Changes a user: only what a flag gives changes.", []string{"user"},
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				output := outputFlag(cmd)
				role := cmd.FS.String("role", "", "new `ROLE`: viewer, operator or admin")
				var fleets fleetFlags
				cmd.FS.Var(&fleets, "fleet", "scope the role to fleet `NAME` (repeatable; replaces the scope)")
				all := cmd.FS.Bool("all-fleets", false, "let the role hold on every fleet")
				pwStdin := cmd.FS.Bool("password-stdin", false, "read a new password from standard input")
				return func(ctx context.Context, args []string) error {
					switch {
					case len(args) != 1:
						return cmdline.Usagef("want one user NAME")
					case *all && fleets != nil:
						return cmdline.Usagef("--fleet and --all-fleets exclude each other")
					}
					// A map, not adminapi.UserPatch: "fleets": null (every
					// fleet) differs from no "fleets" (unchanged).
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
						pw, err := readPassword(cmd.Stdin)
						if err != nil {
							return err
						}
						body["password"] = pw
					}
					if len(body) == 0 {
						return cmdline.Usagef("nothing to change: give --role, --fleet, --all-fleets or --password-stdin")
					}
					data, err := json.Marshal(body)
					if err != nil {
						return err
					}
					cl, err := client()
					if err != nil {
						return err
					}
					r, err := cl.API.UpdateUserWithBodyWithResponse(ctx, args[0], "application/json", bytes.NewReader(data))
					if err != nil {
						return err
					}
					return show(out(cmd), *output, r.Body, nil)
				}
			}),
		c.simple("users", "delete", "NAME", "remove a user", "Removes a user; its console sessions end.", []string{"user"}, "one user NAME",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				r, err := cl.API.DeleteUserWithResponse(ctx, args[0])
				return rawOf(r, err)
			}),
	}}
}

func (c *Commands) apikeys() *cmdline.Group {
	return &cmdline.Group{Name: "apikeys", Summary: "manage API keys for scripts", Leaves: []*cmdline.Leaf{
		c.leaf("apikeys", "create", "--name NAME --role ROLE [--fleet F]... [--expires-in D]", "make an API key (its secret is shown once)",
			"Makes an API key; its secret is shown this once. A script uses it as its bearer token\n"+
				"(MYRIARCH_ADMIN_TOKEN=myrkey_…). A key never carries more than the role of whoever creates it.", nil,
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				output := outputFlag(cmd)
				grant := addGrantFlags(cmd.FS, "key")
				expires := cmd.FS.String("expires-in", "", "the key expires after this `DURATION` (e.g. 90d, 720h); default never")
				return func(ctx context.Context, args []string) error {
					if err := wantArgs(args, 0, "no argument"); err != nil {
						return err
					}
					if err := grant.check(); err != nil {
						return err
					}
					body := adminapi.APIKeyRequest{Name: *grant.name, Role: adminapi.Role(*grant.role), Fleets: grant.scope()}
					if *expires != "" {
						body.ExpiresIn = expires
					}
					cl, err := client()
					if err != nil {
						return err
					}
					r, err := cl.API.CreateAPIKeyWithResponse(ctx, body)
					if err != nil {
						return err
					}
					return show(out(cmd), *output, r.Body, nil)
				}
			}),
		c.simple("apikeys", "list", "", "list the keys (never their secrets)", "Lists the API keys, revoked ones included, never their secrets.", nil, "no argument",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				r, err := cl.API.ListAPIKeysWithResponse(ctx)
				if err != nil {
					return answered{}, err
				}
				return answered{r.Body, func(tw *tabwriter.Writer) {
					fmt.Fprintln(tw, "ID\tNAME\tROLE\tFLEETS\tEXPIRES\tCREATED BY\tREVOKED")
					for _, k := range r.JSON200.Apikeys {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Id, k.Name, k.Role, scopeText(k.Fleets),
							stampOrDash(k.ExpiresAt), k.CreatedBy, stampOrDash(k.RevokedAt))
					}
				}}, nil
			}),
		c.simple("apikeys", "delete", "ID", "revoke a key, at once on every instance", "Revokes an API key: refused from then on, on every instance.",
			[]string{"apikey"}, "one key ID",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				r, err := cl.API.RevokeAPIKeyWithResponse(ctx, args[0])
				return rawOf(r, err)
			}),
	}}
}
