package admincli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/cmdline"
)

// Output formats (--output).
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// outputFlag adds --output (-o) to c; the value is checked when printed.
func outputFlag(c *cmdline.Command) *string {
	f := c.FS.String("output", FormatTable, "print a `FORMAT`: table, json or yaml (json and yaml: the API's answer as it is)")
	c.Short("o", "output")
	return f
}

func checkFormat(format string) error {
	switch format {
	case FormatTable, FormatJSON, FormatYAML:
		return nil
	}
	return cmdline.Usagef("--output %q: want table, json or yaml", format)
}

// show prints the API's answer raw as format: json (indented), yaml, or
// the table table writes (nil: the answer's fields, one per line).
func show(w io.Writer, format string, raw []byte, table func(tw *tabwriter.Writer)) error {
	if err := checkFormat(format); err != nil {
		return err
	}
	switch format {
	case FormatJSON:
		var b bytes.Buffer
		if err := json.Indent(&b, bytes.TrimSpace(raw), "", "  "); err != nil {
			return fmt.Errorf("the server's answer is not JSON: %w", err)
		}
		b.WriteByte('\n')
		_, err := w.Write(b.Bytes())
		return err
	case FormatYAML:
		return writeYAML(w, raw)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if table == nil {
		table = fieldsTable(raw)
	}
	table(tw)
	return tw.Flush()
}

// writeYAML writes a JSON document as YAML, its keys in the JSON's order.
func writeYAML(w io.Writer, raw []byte) error {
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return fmt.Errorf("the server's answer is not JSON: %w", err)
	}
	blockStyle(&n)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return err
	}
	return enc.Close()
}

// blockStyle drops JSON's flow style and quotes: YAML chooses (it quotes
// what would read as another type).
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// fieldsTable prints an object's fields, one per line: a scalar as it is,
// anything else as compact JSON.
func fieldsTable(raw []byte) func(tw *tabwriter.Writer) {
	return func(tw *tabwriter.Writer) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			fmt.Fprintln(tw, strings.TrimSpace(string(raw)))
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\n", k, scalar(m[k]))
		}
	}
}

// scalar is a JSON value as a table cell: a string unquoted, null as "-".
func scalar(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" {
			return "-"
		}
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	if b.String() == "null" {
		return "-"
	}
	return b.String()
}

// orDash is s, or "-" when empty (a table's empty cell).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
