package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/configrender"
)

const renderUsage = `usage: telecraft render --root DIR [--root DIR]... <team>/<blueprint> [-o FILE]
                        [--context FILE.json | --context-from-agent UID [--admin URL]]

Loads the estate under the source roots (the same load as blueprint-check) and
prints the Blueprint as an OpenTelemetry Collector config. Findings about the
Blueprint are printed to stderr as warnings; a render that cannot be faithful
is refused.

With a context, ${…} references are substituted as myriarchd does for one
collector, and what is printed is byte for byte what the server sends: a
receiver whose variable is missing is dropped (a warning says so), a missing
variable elsewhere refuses the render. --context reads a JSON object of
variable names to strings ({"site.id": "edge-007", "host.name": "…"}), or
the document myriarchd renders with ({"context": {…}, "dynamic": {provider:
[{"id", "mapping": {…}, "processors": […]}]}}: a receiver reading a dynamic
provider renders once per mapping); --context-from-agent reads that document
for a live collector from myriarchd's admin API (GET /api/v1/agents/UID/context).

Exit status: 0 rendered, 1 load errors or render refused, 2 usage.
`

// rootList is a repeatable --root flag.
type rootList []string

func (r *rootList) String() string     { return strings.Join(*r, ",") }
func (r *rootList) Set(v string) error { *r = append(*r, v); return nil }

func runRender(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("telecraft render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, renderUsage); fs.PrintDefaults() }
	var roots rootList
	fs.Var(&roots, "root", "source root containing a teams/ tree (repeatable)")
	out := fs.String("o", "", "write the config to FILE instead of stdout")
	ctxFile := fs.String("context", "", "substitute the context in `FILE.json` (an object of variable names to strings)")
	ctxAgent := fs.String("context-from-agent", "", "substitute the context myriarchd renders collector `UID` with")
	client := adminclient.Flags(fs)

	// Flags may come before or after the Blueprint id.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case len(roots) == 0:
		fmt.Fprintln(stderr, "telecraft render: at least one --root is required")
		fs.Usage()
		return 2
	case *ctxFile != "" && *ctxAgent != "":
		fmt.Fprintln(stderr, "telecraft render: --context and --context-from-agent exclude each other")
		return 2
	case len(positional) != 1:
		fmt.Fprintln(stderr, "telecraft render: exactly one <team>/<blueprint> is required")
		fs.Usage()
		return 2
	}
	id := positional[0]
	if t, n, ok := strings.Cut(id, "/"); !ok || t == "" || n == "" || strings.Contains(n, "/") {
		fmt.Fprintf(stderr, "telecraft render: %q is not a Blueprint id: write <team>/<blueprint>\n", id)
		return 2
	}

	est, err := blueprint.Load(roots...)
	if err != nil {
		var les blueprint.LoadErrors
		if errors.As(err, &les) {
			for _, e := range les {
				fmt.Fprintln(stderr, e.Error())
			}
			fmt.Fprintf(stderr, "telecraft render: load failed with %d error(s); nothing rendered\n", len(les))
		} else {
			fmt.Fprintf(stderr, "telecraft render: %v\n", err)
		}
		return 1
	}
	findings, err := est.JudgeBlueprint(id)
	if err != nil {
		fmt.Fprintf(stderr, "telecraft render: %v\n", err)
		return 1
	}
	for _, f := range findings {
		fmt.Fprintf(stderr, "warning: %s finding [%s] (owner %s): %s\n", f.Kind, f.Lane, f.Owner, f.Message)
	}
	var cfg []byte
	if *ctxFile == "" && *ctxAgent == "" {
		cfg, err = est.Render(context.Background(), id, blueprint.GitHistory{})
	} else {
		cfg, err = renderContext(est, id, *ctxFile, *ctxAgent, client, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "telecraft render: %v\n", err)
		return 1
	}
	if *out == "" {
		if _, err := stdout.Write(cfg); err != nil {
			fmt.Fprintf(stderr, "telecraft render: %v\n", err)
			return 1
		}
		return 0
	}
	if err := writeFile(*out, cfg); err != nil {
		fmt.Fprintf(stderr, "telecraft render: %v\n", err)
		return 1
	}
	return 0
}

// writeFile stages the config next to its destination and renames it into
// place, so a reader never sees half a config.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// renderContext renders the Blueprint with a collector's context, read
// from a file or from a live agent, with myriarchd's own code.
func renderContext(est *blueprint.Estate, id, file, agent string, client func() (*adminclient.Client, error), stderr io.Writer) ([]byte, error) {
	var raw []byte
	var where string
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--context: %w", err)
		}
		raw, where = data, file
	} else {
		cl, err := client()
		if err != nil {
			return nil, err
		}
		r, err := cl.API.GetAgentContextWithResponse(context.Background(), agent)
		if err != nil {
			return nil, fmt.Errorf("--context-from-agent: %w", err)
		}
		raw = r.Body
		where = "agent " + agent
	}
	doc, err := configrender.ParseDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("context of %s: %w", where, err)
	}
	tm, err := configrender.Compile(est, id, blueprint.GitHistory{})
	if err != nil {
		return nil, err
	}
	res, err := tm.Render(doc.Input())
	if err != nil {
		return nil, err
	}
	for _, d := range res.Dropped {
		fmt.Fprintf(stderr, "warning: %s\n", d)
	}
	return res.Body, nil
}
