// Package admincli is myriarchd's client commands: one for each operation
// of the admin API, made through the client generated from the API's
// document (internal/adminapi), printing a table, JSON or YAML
// (--output), with cmdline's exit codes. Each command finds the server as
// adminclient.Flags says.
package admincli

import (
	"context"
	"flag"
	"io"
	"os"
	"reflect"
	"text/tabwriter"

	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/cmdline"
)

// Options are what the commands need of the program that runs them.
type Options struct {
	// ServerConfig reads the server's configuration file that --config
	// (or MYRIARCH_CONFIG) names, for where the server is; nil: --config
	// is not offered.
	ServerConfig func(path string) (adminclient.Settings, error)
}

// Commands are the client commands, in the order the usage lists them.
type Commands struct {
	o Options
}

// New returns the client commands.
func New(o Options) *Commands { return &Commands{o: o} }

// Groups are the commands' groups.
func (c *Commands) Groups() []*cmdline.Group {
	return append([]*cmdline.Group{
		c.agents(), c.fleets(), c.estate(), c.tokens("tokens"), c.users(), c.apikeys(), c.audit(),
		c.console(), c.pairings(), c.notifications(),
	}, c.server()...)
}

// Aliases are groups under another name kept for scripts: "token".
func (c *Commands) Aliases() []*cmdline.Group { return []*cmdline.Group{c.tokens("token")} }

// Connect adds the connection flags to fs (and --config when the program
// reads the server's configuration file); the function returned makes the
// client once the flags are parsed.
func (c *Commands) Connect(fs *flag.FlagSet) func() (*adminclient.Client, error) {
	if c.o.ServerConfig == nil {
		return adminclient.Flags(fs)
	}
	path := fs.String("config", "", "the server's config `FILE`, read for admin_listen, data_dir and admin_token_file (env MYRIARCH_CONFIG)")
	return adminclient.FlagsWith(fs, func() (adminclient.Settings, error) {
		p := *path
		if p == "" {
			p = os.Getenv("MYRIARCH_CONFIG")
		}
		if p == "" {
			return adminclient.Settings{}, nil
		}
		return c.o.ServerConfig(p)
	})
}

// action is a command's work once its flags and arguments are parsed.
type action = func(ctx context.Context, args []string) error

// leaf makes a cmdline.Leaf whose setup adds the connection flags: setup
// gets the client maker and declares the command's own flags.
func (c *Commands) leaf(group, name, args, summary, about string, kinds []string,
	setup func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action) *cmdline.Leaf {
	syn := group + " " + name
	if args != "" {
		syn += " " + args
	}
	return &cmdline.Leaf{Name: name, Synopsis: syn + " [flags]", Summary: summary, About: about, Args: kinds,
		Setup: func(cmd *cmdline.Command) func(context.Context, []string) error {
			client := c.Connect(cmd.FS)
			return setup(cmd, client)
		}}
}

// wantArgs checks the number of positional arguments.
func wantArgs(args []string, n int, what string) error {
	if n == 0 && len(args) > 0 {
		return cmdline.Usagef("unexpected argument %q", args[0])
	}
	if len(args) != n {
		return cmdline.Usagef("want %s", what)
	}
	return nil
}

// begin checks a command's positional arguments (n of them; what names
// them) and its output format ("" for a command without --output), then
// makes its client.
func begin(args []string, n int, what, format string, client func() (*adminclient.Client, error)) (*adminclient.Client, error) {
	if err := wantArgs(args, n, what); err != nil {
		return nil, err
	}
	if format != "" {
		if err := checkFormat(format); err != nil {
			return nil, err
		}
	}
	return client()
}

// out is where a command prints.
func out(cmd *cmdline.Command) io.Writer { return cmd.Stdout }

// answered is a call's answer: the body as the server sent it, and the
// table of it (nil: its fields).
type answered struct {
	raw   []byte
	table func(tw *tabwriter.Writer)
}

// simple makes a leaf with no flags of its own but --output: it takes
// len(kinds) positional arguments (what names them), makes one call and
// prints its answer.
func (c *Commands) simple(group, name, args, summary, about string, kinds []string, what string,
	call func(ctx context.Context, cl *adminclient.Client, args []string) (answered, error)) *cmdline.Leaf {
	return c.leaf(group, name, args, summary, about, kinds,
		func(cmd *cmdline.Command, client func() (*adminclient.Client, error)) action {
			output := outputFlag(cmd)
			return func(ctx context.Context, args []string) error {
				cl, err := begin(args, len(kinds), what, *output, client)
				if err != nil {
					return err
				}
				// An answer comes with an error when the server's answer
				// says something failed (a verification): both are said.
				a, err := call(ctx, cl, args)
				if a.raw != nil {
					if perr := show(out(cmd), *output, a.raw, a.table); perr != nil {
						return perr
					}
				}
				return err
			}
		})
}

// rawOf is a generated client's answer (every one has its body as Body)
// printed as it is: its fields, in a table.
func rawOf(r any, err error) (answered, error) {
	if err != nil {
		return answered{}, err
	}
	return answered{raw: reflect.ValueOf(r).Elem().FieldByName("Body").Bytes()}, nil
}
