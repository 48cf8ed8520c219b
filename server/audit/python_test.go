package audit_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/server/audit"
)

// pythonCheck is the Python of the package documentation.
func pythonCheck(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var script []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if line == "//\timport hashlib, json, sys" {
			in = true
		}
		if in {
			code, ok := strings.CutPrefix(line, "//\t")
			if !ok {
				break
			}
			script = append(script, code)
		}
	}
	if len(script) < 5 {
		t.Fatalf("no Python in doc.go (%d lines)", len(script))
	}
	return strings.Join(script, "\n") + "\n"
}

// The Python of the package documentation recomputes every hash of an
// export of the trail as the API writes it (<, > and & escaped), strings
// that need escaping included; and it refuses the export once one record
// is changed.
func TestPythonRecomputesHashes(t *testing.T) {
	python := testenv.Tool(t, "python3", "python3")
	script := pythonCheck(t)
	st, _ := backends[0].open(t)
	tr := audit.New(audit.Options{Store: st})
	tricky := []string{golden.Detail, "", "\x00 and \xff\xfe, made valid", strings.Repeat("é", 600), "\U0001F600\u2029\u0085"}
	for i, d := range tricky {
		r := sample(i)
		r.Detail, r.Target = d, d
		if _, err := tr.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	p, err := tr.List(ctx, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	enc := json.NewEncoder(&export) // escapes <, > and & as the API's answers do
	for _, r := range p.Records {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(export.String(), `\u003c`) {
		t.Fatalf("the export does not escape <: %s", export.String())
	}
	run := func(in []byte) (string, error) {
		cmd := exec.Command(python, "-c", script)
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(export.Bytes())
	last := p.Records[0].Hash
	if err != nil || !strings.Contains(out, "5 records chained, the last hash "+last) {
		t.Fatalf("python: %v\n%s", err, out)
	}
	changed := bytes.Replace(export.Bytes(), []byte(`"actor":"user-2"`), []byte(`"actor":"user-9"`), 1)
	if out, err := run(changed); err == nil || !strings.Contains(out, "record 3 does not follow") {
		t.Fatalf("python accepted a changed record: %v\n%s", err, out)
	}
}
