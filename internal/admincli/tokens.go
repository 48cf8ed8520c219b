package admincli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/myriarch/myriarch/internal/adminapi"
	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/cmdline"
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

func (c *Commands) tokens(name string) *cmdline.Group {
	return &cmdline.Group{Name: name, Summary: "manage enrollment tokens", Leaves: []*cmdline.Leaf{
		c.leaf(name, "create", "--name NAME [--label KEY=VALUE]...", "create an enrollment token (its secret is shown once)",
			"Creates an enrollment token; its secret is shown this once.", nil,
			func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
				output := outputFlag(cmd)
				tokenName := cmd.FS.String("name", "", "token `NAME` (required)")
				labels := labelFlags{}
				cmd.FS.Var(labels, "label", "label `KEY=VALUE` of the agents enrolling with it (repeatable)")
				return func(ctx context.Context, args []string) error {
					if err := wantArgs(args, 0, "no argument"); err != nil {
						return err
					}
					if *tokenName == "" {
						return cmdline.Usagef("--name is required")
					}
					cl, err := client()
					if err != nil {
						return err
					}
					l := map[string]string(labels)
					r, err := cl.API.CreateTokenWithResponse(ctx, adminapi.TokenRequest{Name: *tokenName, Labels: &l})
					if err != nil {
						return err
					}
					return show(out(cmd), *output, r.Body, nil)
				}
			}),
		c.simple(name, "list", "", "list the tokens (never their secrets)",
			"Lists the enrollment tokens, revoked ones included, never their secrets.", nil, "no argument",
			func(ctx context.Context, cl *adminclient.Client, _ []string) (answered, error) {
				r, err := cl.API.ListTokensWithResponse(ctx)
				if err != nil {
					return answered{}, err
				}
				return answered{r.Body, func(tw *tabwriter.Writer) {
					fmt.Fprintln(tw, "ID\tNAME\tLABELS\tCREATED\tREVOKED")
					for _, t := range r.JSON200.Tokens {
						var labels map[string]string
						if t.Labels != nil {
							labels = *t.Labels
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Id, t.Name, orDash(joinLabels(labels)), stamp(t.CreatedAt), stampOrDash(t.RevokedAt))
					}
				}}, nil
			}),
		c.simple(name, "revoke", "ID", "revoke a token and disconnect its agents",
			"Revokes a token: agents enrolled with it are disconnected and refused from then on.", []string{"token"}, "one token ID",
			func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error) {
				r, err := cl.API.RevokeTokenWithResponse(ctx, args[0])
				return rawOf(r, err)
			}),
	}}
}

func joinLabels(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// stamp is a time in a table: UTC, to the second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func stampOrDash(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return stamp(*t)
}
