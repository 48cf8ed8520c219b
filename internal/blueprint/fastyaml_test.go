package blueprint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// sameTree reports the first difference between the fast tree and
// go-yaml's, ignoring comments (which the loader never reads).
func sameTree(fast, slow *yaml.Node, path string) error {
	if fast.Kind != slow.Kind || fast.Tag != slow.Tag || fast.Value != slow.Value || fast.Style != slow.Style ||
		fast.Line != slow.Line || fast.Column != slow.Column || fast.Anchor != slow.Anchor || fast.Alias != slow.Alias ||
		len(fast.Content) != len(slow.Content) {
		return fmt.Errorf("%s: fast {kind %d tag %q value %q style %d at %d:%d, %d children}, go-yaml {kind %d tag %q value %q style %d at %d:%d, %d children}",
			path, fast.Kind, fast.Tag, fast.Value, fast.Style, fast.Line, fast.Column, len(fast.Content),
			slow.Kind, slow.Tag, slow.Value, slow.Style, slow.Line, slow.Column, len(slow.Content))
	}
	for i := range fast.Content {
		if err := sameTree(fast.Content[i], slow.Content[i], fmt.Sprintf("%s/%d", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// checkFast fails when fastDocument accepts src but go-yaml reads it
// differently (or not at all). It reports whether the fast path was taken.
func checkFast(t *testing.T, src string, sc *fastScratch) bool {
	t.Helper()
	fast, ok := fastDocument(src, sc)
	if !ok {
		return false
	}
	dec := yaml.NewDecoder(strings.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("fast path accepted what go-yaml rejects (%v):\n%s", err, src)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("fast path accepted a file go-yaml does not read as one document (%v):\n%s", err, src)
	}
	if len(doc.Content) != 1 {
		t.Fatalf("go-yaml found no document in what the fast path accepted:\n%s", src)
	}
	if err := sameTree(fast, doc.Content[0], ""); err != nil {
		t.Fatalf("%v\n--- input\n%s", err, src)
	}
	return true
}

func testdataYAML(tb testing.TB) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// fastCases are inputs near the edges of the subset: each must either be
// refused or read exactly as go-yaml reads it.
var fastCases = []string{
	"a: 1\n",
	"a: 1",
	"a:\n  b: c\n  d: e\nf: g\n",
	"a:\n- x\n- y\nb: z\n",
	"a:\n  - x\n  -   y\n",
	"- a\n",
	"a:\n  - b: 1\n    c: 2\n  - d: 3\n",
	"a:\n  -\n    b: 1\n",
	"a:\n  -   b: 1\n      c: 2\n",
	"- a: 1\n  - b\n",
	"a:\n  - b:\n    - c\n",
	"a: b # c\n# d\n  # e\n\ne: f#g\n",
	"a: 1\n  b: 2\n",
	"a: b\n  c\n",
	"a:\n  b: 1\n c: 2\n",
	"a:\nb: 1\n",
	"a:\n",
	"a: b: c\n",
	"a: 'b'\n",
	"a: \"b\"\n",
	"a: [b]\n",
	"a: &x b\nc: *x\n",
	"a: !!str 1\n",
	"a: |\n  b\n",
	"---\na: 1\n",
	"a: 1\n---\nb: 2\n",
	"a: 1\n...\n",
	"%YAML 1.2\n---\na: 1\n",
	"a:\tb\n",
	"a: b\r\n",
	"\ufeffa: b\n",
	"a: é\n",
	"  a: 1\n  b: 2\n",
	"a: 1\nb: 2\na: 3\n",
	"a: ~\nb: null\nc: Null\nd: true\ne: False\nf: yes\ng: on\nh: y\ni: n\n",
	"a: 0\nb: 007\nc: 08\nd: 0x1F\ne: 0o17\nf: 1_000\ng: 1e3\nh: .5\ni: 1.5\nj: -1\nk: +1\nl: .inf\nm: .nan\n",
	"a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\nc: 12:30\nd: 1s\ne: 127.0.0.1:4317\n",
	"a: 99999999999999999999\nb: 123456789012345678\nc: 1234567890123456789\n",
	"1: a\ntrue: b\nnull: c\n.5: d\n",
	"a: b\\c\nd: e,f\ng: h[i]\nj: k{l}\nm: n'o\"p\n",
	"a: http://x/y?z=1&w=2\nb: ${env:HOME}\nc: x:y\n",
	"a: <<\n",
	"a: otlp\nb: True\nc: TRUE\nd: tRUE\ne: Null\nf: nULL\ng: yes\nh: off\ni: n\nj: _x\nk: o\n",
	"a: 1s\nb: 1x\nc: 0x1G\nd: 1e5\ne: 1_0\nf: 1:2\ng: 2001-1-2 3:4:5\nh: 0b101\ni: 0o17\nj: 1.5e-3\nk: 2001-12-14T21:59:43Z\n",
	"a: 0x1p-2\nb: 1inf\nc: 1nan\nd: 12ab\ne: 1_000_000\nf: 0.\ng: 1e\nh: 09\ni: 0\nj: 00\nk: 1 2\n",
	"a: {}\nb: []\nc:\n  - {}\n  - []\n",
	"{}: a\n",
	"a: {} # c\n",
	"a: { }\n",
	"a: -b\nc: ?d\ne: :f\n",
	"a:b\n",
	"a :b\n",
	"a/b.c-d_e: 1\n",
	"key with space: 1\n",
	"a: b #\n",
	"a: b#\n",
	"a:  \n  b: 1\n",
	"a: 1   \n",
	"-\n",
	"- - a\n",
	"a:\n  - b\n  c: d\n",
	"a:\n  - b\n c: d\n",
	"a:\n- b\n  - c\n",
	"a:\n  b:\n    c:\n      d: 1\n  e: 2\n",
	"x: " + strings.Repeat("k", 300) + "\n" + strings.Repeat("k", 300) + ": 1\n",
}

func TestFastDocumentMatchesGoYAML(t *testing.T) {
	var sc fastScratch
	for i, src := range fastCases {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkFast(t, src, &sc) })
	}
	for p, src := range testdataYAML(t) {
		t.Run(p, func(t *testing.T) { checkFast(t, src, &sc) })
	}
}

// TestFastDocumentCovers keeps the fast path in use: it must take the
// plain files authors write, the benchmark's among them.
func TestFastDocumentCovers(t *testing.T) {
	dir := t.TempDir()
	writeEstate(t, dir, 2)
	var sc fastScratch
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !checkFast(t, string(data), &sc) {
			t.Errorf("fast path refused the generated %s:\n%s", p, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile(filepath.Join("testdata", "render", "seed-gateway", "root", "teams", "data-flow", "blueprints", "gateway-standard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !checkFast(t, string(seed), &sc) {
		t.Errorf("fast path refused the specification's Blueprint:\n%s", seed)
	}
}

// FuzzFastDocument holds the fast path to go-yaml on arbitrary input.
func FuzzFastDocument(f *testing.F) {
	for _, src := range fastCases {
		f.Add([]byte(src))
	}
	for _, src := range testdataYAML(f) {
		f.Add([]byte(src))
	}
	dir := f.TempDir()
	writeEstate(f, dir, 1)
	for _, rel := range []string{"blueprints/bp1.yaml", "components/gw.yaml", "components/attrs.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, "teams", "team0000", filepath.FromSlash(rel)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.IndexByte(in, 0) >= 0 {
			return
		}
		checkFast(t, string(in), nil)
	})
}

// loadBothWays loads srcs with and without the fast path and fails unless
// the two loads, the findings and every render are the same.
func loadBothWays(t *testing.T, load func() (*Estate, error)) {
	t.Helper()
	fast, fastErr := load()
	goYAMLOnly.Store(true)
	slow, slowErr := load()
	goYAMLOnly.Store(false)
	if fmt.Sprint(fastErr) != fmt.Sprint(slowErr) {
		t.Fatalf("load errors differ:\nfast path: %v\ngo-yaml:   %v", fastErr, slowErr)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("estates differ:\nfast path: %#v\ngo-yaml:   %#v", fast, slow)
	}
	if fast == nil {
		return
	}
	if f, s := fast.Judge(), slow.Judge(); !reflect.DeepEqual(f, s) {
		t.Fatalf("findings differ:\nfast path: %v\ngo-yaml:   %v", f, s)
	}
	for _, id := range fast.BlueprintIDs() {
		f, ferr := fast.Render(context.Background(), id, nil)
		s, serr := slow.Render(context.Background(), id, nil)
		if string(f) != string(s) || fmt.Sprint(ferr) != fmt.Sprint(serr) {
			t.Fatalf("render of %s differs:\nfast path: %v\n%s\ngo-yaml: %v\n%s", id, ferr, f, serr, s)
		}
	}
}

// TestFastPathSameLoads loads every testdata estate with and without the
// fast path: errors, estates, findings and renders must not change.
func TestFastPathSameLoads(t *testing.T) {
	for _, group := range []string{"load", "findings", "render"} {
		for _, name := range caseDirs(t, group) {
			t.Run(group+"/"+name, func(t *testing.T) {
				roots := caseRoots(t, filepath.Join("testdata", group, name))
				loadBothWays(t, func() (*Estate, error) { return Load(roots...) })
			})
		}
	}
	t.Run("generated", func(t *testing.T) {
		dir := t.TempDir()
		writeEstate(t, dir, 3)
		loadBothWays(t, func() (*Estate, error) { return Load(dir) })
	})
}
