package linediff

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// apply rebuilds both sides from the full edit script.
func sides(all []Line) (string, string) {
	var a, b strings.Builder
	for _, l := range all {
		if l.Op != '+' {
			a.WriteString(l.Text + "\n")
		}
		if l.Op != '-' {
			b.WriteString(l.Text + "\n")
		}
	}
	return a.String(), b.String()
}

func render(h []Hunk) string {
	var b strings.Builder
	for i, hk := range h {
		if i > 0 {
			b.WriteString("@@\n")
		}
		for _, l := range hk.Lines {
			fmt.Fprintf(&b, "%c%s\n", l.Op, l.Text)
		}
	}
	return b.String()
}

func TestLineDiff(t *testing.T) {
	for _, tc := range []struct{ name, a, b, want string }{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one changed line", "receivers:\n  otlp:\nexporters:\n  file:\n    path: /a\n", "receivers:\n  otlp:\nexporters:\n  file:\n    path: /b\n",
			"   otlp:\n exporters:\n   file:\n-    path: /a\n+    path: /b\n"},
		{"added at the end", "a\n", "a\nb\n", " a\n+b\n"},
		{"from nothing", "", "a\nb\n", "+a\n+b\n"},
		{"to nothing", "a\n", "", "-a\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			" 1\n-2\n+X\n 3\n 4\n 5\n@@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
		{"no final newline", "a\nb", "a\nc", " a\n-b\n+c\n"},
	} {
		h, ok := Lines(tc.a, tc.b)
		if !ok {
			t.Fatalf("%s: out of bounds", tc.name)
		}
		if got := render(h); got != tc.want {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// Random edits: the script always rebuilds both texts, and is minimal
// enough to stay within the edits made.
func TestLineDiffRebuildsBothSides(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		var a []string
		for j := 0; j < r.IntN(40); j++ {
			a = append(a, fmt.Sprintf("line %d\n", r.IntN(8)))
		}
		b := append([]string(nil), a...)
		edits := r.IntN(6)
		for e := 0; e < edits; e++ {
			p := 0
			if len(b) > 0 {
				p = r.IntN(len(b))
			}
			if r.IntN(2) == 0 && len(b) > 0 {
				b = append(b[:p], b[p+1:]...)
			} else {
				b = append(b[:p], append([]string{fmt.Sprintf("new %d\n", e)}, b[p:]...)...)
			}
		}
		x, y := strings.Join(a, ""), strings.Join(b, "")
		ops, ok := myers(splitLines(x), splitLines(y))
		if !ok {
			t.Fatal("out of bounds")
		}
		var all []Line
		xi, yi := 0, 0
		xs, ys := splitLines(x), splitLines(y)
		changes := 0
		for _, op := range ops {
			switch op {
			case ' ':
				if xs[xi] != ys[yi] {
					t.Fatalf("case %d: kept line differs: %q %q", i, xs[xi], ys[yi])
				}
				all = append(all, Line{Op: ' ', Text: xs[xi]})
				xi++
				yi++
			case '-':
				all = append(all, Line{Op: '-', Text: xs[xi]})
				xi++
				changes++
			case '+':
				all = append(all, Line{Op: '+', Text: ys[yi]})
				yi++
				changes++
			}
		}
		if ga, gb := sides(all); ga != x || gb != y {
			t.Fatalf("case %d: script does not rebuild the texts", i)
		}
		if changes > 2*edits {
			t.Fatalf("case %d: %d changed lines for %d edits", i, changes, edits)
		}
	}
}

func TestLineDiffRefusesBeyondBounds(t *testing.T) {
	var a, b strings.Builder
	for i := 0; i < MaxEdits+10; i++ {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	if _, ok := Lines(a.String(), b.String()); ok {
		t.Fatal("diffed two texts with no line in common beyond the edit bound")
	}
	big := strings.Repeat("same\n", 200000)
	if h, ok := Lines(big+"x\n", big+"y\n"); !ok || len(h) != 1 {
		t.Fatalf("a one-line change in a large config: ok=%v hunks=%d", ok, len(h))
	}
}

func TestUnified(t *testing.T) {
	for _, tc := range []struct{ name, a, b, want string }{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one changed line", "a\nb\nc\n", "a\nx\nc\n", "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+x\n c\n"},
		{"from nothing", "", "a\nb\n", "--- old\n+++ new\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"to nothing", "a\n", "", "--- old\n+++ new\n@@ -1 +0,0 @@\n-a\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- old\n+++ new\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
		{"insertion", "a\nb\n", "a\nnew\nb\n", "--- old\n+++ new\n@@ -1,2 +1,3 @@\n a\n+new\n b\n"},
	} {
		got, ok := Unified("old", "new", tc.a, tc.b)
		if !ok || got != tc.want {
			t.Errorf("%s: %v\n%s\nwant\n%s", tc.name, ok, got, tc.want)
		}
	}
}
