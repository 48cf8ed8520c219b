package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/myriarch/myriarch/internal/vars"
)

const varsUsage = `usage: telecraft vars --context CTX.json [--dynamic DYN.json] [--default-provider NAME] (--value | --document) FILE|-

Evaluates ${…} variable substitution and prints JSON on stdout:
  success  {"value": …}  or  {"document": …, "dropped": [{"input", "set", "reference"}]}   exit 0
  failure  {"error": {"kind": "parse"|"missing"|"render", "message": "…"}}                 exit 1

  CTX.json  {"<provider>": {…}, …}
  DYN.json  [{"provider": "local_dynamic", "id": "0", "priority": 0, "vars": {…}, "processors": […]}, …]
  --value     FILE's raw text is one template string (--dynamic is ignored)
  --document  FILE is a YAML document with inputs and outputs
`

// varsFlags are the parsed command line of `telecraft vars`.
type varsFlags struct {
	context, dynamic, defaultProvider string
	value, document                   bool
	file                              string
}

// runVars implements `telecraft vars`. Every outcome but -h is JSON on
// stdout; details for humans go to stderr.
func runVars(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseVarsFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, varsUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "telecraft vars: %v\n%s", err, varsUsage)
		return writeVarsError(stdout, vars.KindRender, "usage: "+err.Error())
	}
	out, err := evalVars(f, stdin, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "telecraft vars: %v\n", err)
		return writeVarsError(stdout, vars.KindOf(err), err.Error())
	}
	if err := writeJSON(stdout, out); err != nil {
		fmt.Fprintf(stderr, "telecraft vars: %v\n", err)
		return writeVarsError(stdout, vars.KindRender, err.Error())
	}
	return 0
}

// parseVarsFlags accepts flags before and after FILE.
func parseVarsFlags(args []string, stderr io.Writer) (varsFlags, error) {
	var f varsFlags
	fs := flag.NewFlagSet("telecraft vars", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.context, "context", "", "provider context JSON file")
	fs.StringVar(&f.dynamic, "dynamic", "", "dynamic mappings JSON file")
	fs.StringVar(&f.defaultProvider, "default-provider", vars.DefaultProvider, "provider prefixed to names without a dot")
	fs.BoolVar(&f.value, "value", false, "FILE is one template string")
	fs.BoolVar(&f.document, "document", false, "FILE is a YAML document")
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return f, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	switch {
	case f.context == "":
		return f, errors.New("--context is required")
	case f.value == f.document:
		return f, errors.New("exactly one of --value and --document is required")
	case len(positional) != 1:
		return f, fmt.Errorf("exactly one FILE (or -) is required, got %d", len(positional))
	}
	f.file = positional[0]
	return f, nil
}

func evalVars(f varsFlags, stdin io.Reader, stderr io.Writer) (any, error) {
	eng := vars.Engine{DefaultProvider: f.defaultProvider}
	if err := eng.Validate(); err != nil {
		return nil, err
	}
	ctx, err := readContext(f.context)
	if err != nil {
		return nil, err
	}
	var mappings []vars.Mapping
	if f.dynamic != "" && f.document {
		if mappings, err = readDynamic(f.dynamic); err != nil {
			return nil, err
		}
	}
	data, err := vars.NewData(ctx, mappings)
	if err != nil {
		return nil, err
	}
	src, err := readInput(f.file, stdin)
	if err != nil {
		return nil, err
	}
	if f.value {
		v, _, err := eng.RenderValue(string(src), data)
		if err != nil {
			return nil, err
		}
		return map[string]any{"value": v}, nil
	}
	name := f.file
	if name == "-" {
		name = "stdin"
	}
	res, err := eng.RenderYAML(name, src, data)
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "telecraft vars: warning: %s\n", w)
	}
	return struct {
		Document map[string]any `json:"document"`
		Dropped  []vars.Dropped `json:"dropped"`
	}{res.Document, res.Dropped}, nil
}

func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, &vars.RenderError{Path: "stdin", Msg: err.Error()}
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, &vars.RenderError{Path: name, Msg: err.Error()}
	}
	return b, nil
}

// decodeJSONFile decodes one JSON value keeping integers integers.
func decodeJSONFile(name string, into any) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return &vars.RenderError{Path: name, Msg: err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return &vars.RenderError{Path: name, Msg: "invalid JSON: " + err.Error()}
	}
	if dec.More() {
		return &vars.RenderError{Path: name, Msg: "invalid JSON: data after the first value"}
	}
	return nil
}

func readContext(name string) (map[string]any, error) {
	var raw any
	if err := decodeJSONFile(name, &raw); err != nil {
		return nil, err
	}
	ctx, ok := raw.(map[string]any)
	if !ok {
		return nil, &vars.RenderError{Path: name, Msg: "context must be a JSON object {provider: object}"}
	}
	return ctx, nil
}

// dynMapping is one DYN.json entry; vars and processors stay raw so numbers
// keep their JSON kind.
type dynMapping struct {
	Provider   *string         `json:"provider"`
	ID         json.RawMessage `json:"id"`
	Priority   json.Number     `json:"priority"`
	Vars       any             `json:"vars"`
	Processors any             `json:"processors"`
}

func readDynamic(name string) ([]vars.Mapping, error) {
	var raw []dynMapping
	if err := decodeJSONFile(name, &raw); err != nil {
		return nil, err
	}
	var errs []error
	out := make([]vars.Mapping, 0, len(raw))
	for i, r := range raw {
		where := fmt.Sprintf("%s[%d]", name, i)
		var m vars.Mapping
		if r.Provider == nil || *r.Provider == "" {
			errs = append(errs, &vars.RenderError{Path: where, Msg: `"provider" must be a non-empty string`})
		} else {
			m.Provider = *r.Provider
		}
		id, err := mappingID(r.ID)
		if err != nil {
			errs = append(errs, &vars.RenderError{Path: where + ".id", Msg: err.Error()})
		}
		m.ID = id
		if r.Priority != "" {
			p, err := r.Priority.Int64()
			if err != nil {
				errs = append(errs, &vars.RenderError{Path: where + ".priority", Msg: "must be an integer"})
			}
			m.Priority = int(p)
		}
		switch v := r.Vars.(type) {
		case nil:
		case map[string]any:
			m.Vars = v
		default:
			errs = append(errs, &vars.RenderError{Path: where + ".vars", Msg: "must be an object"})
		}
		switch p := r.Processors.(type) {
		case nil:
		case []any:
			m.Processors = p
		default:
			errs = append(errs, &vars.RenderError{Path: where + ".processors", Msg: "must be a list"})
		}
		out = append(out, m)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// mappingID accepts a JSON string, or an integer written canonically.
func mappingID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New(`"id" is required`)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return "", errors.New(`"id" must not be empty`)
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		if _, err := n.Int64(); err == nil {
			return n.String(), nil
		}
	}
	return "", errors.New(`"id" must be a string`)
}

func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func writeVarsError(w io.Writer, kind vars.Kind, msg string) int {
	_ = writeJSON(w, map[string]any{"error": map[string]any{"kind": string(kind), "message": msg}})
	return 1
}
