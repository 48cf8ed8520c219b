// Package linediff compares two texts line by line: the hunks of a
// unified diff (the console's configuration diffs) and its text (estate
// plans), within bounds of lines and edits past which it declines rather
// than spend a server's CPU or memory on one comparison.
package linediff

import (
	"fmt"
	"strings"
)

// Bounds: beyond them Lines declines, and its caller says the texts differ
// too much to show a diff.
const (
	MaxLines = 50000 // lines of each side after the common prefix and suffix
	MaxEdits = 2000  // inserted plus deleted lines
	Context  = 3
)

// Line is one line of a unified diff: Op is ' ', '-' or '+'; Old and
// New are 1-based line numbers (0 where the line is not on that side).
type Line struct {
	Op       byte
	Old, New int
	Text     string
}

// Hunk is a run of changes with their context.
type Hunk struct {
	Lines []Line
}

// Lines compares two texts line by line (Myers' algorithm on what lies
// between their common prefix and suffix) and returns the changes with
// Context lines around them; ok is false when the texts are beyond the
// bounds.
func Lines(a, b string) (hunks []Hunk, ok bool) {
	x, y := splitLines(a), splitLines(b)
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	if len(mx) > MaxLines || len(my) > MaxLines {
		return nil, false
	}
	ops, ok := myers(mx, my)
	if !ok {
		return nil, false
	}
	var all []Line
	for i := 0; i < pre; i++ {
		all = append(all, Line{Op: ' ', Old: i + 1, New: i + 1, Text: x[i]})
	}
	oi, ni := pre, pre
	for _, op := range ops {
		switch op {
		case ' ':
			all = append(all, Line{Op: ' ', Old: oi + 1, New: ni + 1, Text: x[oi]})
			oi++
			ni++
		case '-':
			all = append(all, Line{Op: '-', Old: oi + 1, Text: x[oi]})
			oi++
		case '+':
			all = append(all, Line{Op: '+', New: ni + 1, Text: y[ni]})
			ni++
		}
	}
	for ; oi < len(x); oi, ni = oi+1, ni+1 {
		all = append(all, Line{Op: ' ', Old: oi + 1, New: ni + 1, Text: x[oi]})
	}
	return hunksOf(all), true
}

// splitLines cuts a text into lines without their newlines (a missing
// final newline is no difference).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// myers returns the edit script turning x into y as ' ', '-' and '+'
// operations, or false when it needs more than MaxEdits edits. It keeps
// one frontier per edit distance (O(D²) memory).
func myers(x, y []string) ([]byte, bool) {
	n, m := len(x), len(y)
	max := min(n+m, MaxEdits)
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	for d := 0; d <= max; d++ {
		snap := make([]int, 2*d+1)
		for k := -d; k <= d; k += 2 {
			var px int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				px = v[off+k+1] // down: insertion
			} else {
				px = v[off+k-1] + 1 // right: deletion
			}
			py := px - k
			for px < n && py < m && x[px] == y[py] {
				px++
				py++
			}
			v[off+k] = px
			if px >= n && py >= m {
				for j := -d; j <= d; j += 2 {
					snap[j+d] = v[off+j]
				}
				trace = append(trace, snap)
				return backtrack(trace, n, m), true
			}
		}
		for j := -d; j <= d; j += 2 {
			snap[j+d] = v[off+j]
		}
		trace = append(trace, snap)
	}
	return nil, false
}

// backtrack walks the frontiers back from (n, m) to the start.
func backtrack(trace [][]int, n, m int) []byte {
	var ops []byte
	px, py := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1]
		at := func(k int) int { return prev[k+(d-1)] }
		k := px - py
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		sx := at(pk)
		sy := sx - pk
		for px > sx && py > sy { // the snake after the edit
			ops = append(ops, ' ')
			px--
			py--
		}
		if pk == k+1 {
			ops = append(ops, '+')
		} else {
			ops = append(ops, '-')
		}
		px, py = sx, sy
	}
	for px > 0 && py > 0 {
		ops = append(ops, ' ')
		px--
		py--
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}

// hunksOf keeps the changed lines with Context lines around them;
// changes closer than twice that share a hunk.
func hunksOf(all []Line) []Hunk {
	var hunks []Hunk
	for i := 0; i < len(all); {
		for i < len(all) && all[i].Op == ' ' {
			i++
		}
		if i == len(all) {
			break
		}
		start, last := max(0, i-Context), i
		for j := i; j < len(all) && j-last <= 2*Context; j++ {
			if all[j].Op != ' ' {
				last = j
			}
		}
		stop := min(len(all), last+Context+1)
		hunks = append(hunks, Hunk{Lines: all[start:stop]})
		i = stop
	}
	return hunks
}

// Unified is the text of a unified diff from a (named from) to b (named
// to), as diff -u writes it; ok is false when the texts are beyond the
// bounds. Equal texts give "".
func Unified(from, to, a, b string) (string, bool) {
	hunks, ok := Lines(a, b)
	if !ok {
		return "", false
	}
	if len(hunks) == 0 {
		return "", true
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", from, to)
	for _, h := range hunks {
		oldStart, oldN, newStart, newN := 0, 0, 0, 0
		for _, l := range h.Lines {
			if l.Op != '+' {
				if oldN == 0 {
					oldStart = l.Old
				}
				oldN++
			}
			if l.Op != '-' {
				if newN == 0 {
					newStart = l.New
				}
				newN++
			}
		}
		// A side without lines in a hunk is an empty text (every hunk
		// of a text with lines has context or deletions): diff -u says
		// 0,0 for it, as oldStart and newStart are then.
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(oldStart, oldN), hunkRange(newStart, newN))
		for _, l := range h.Lines {
			sb.WriteByte(l.Op)
			sb.WriteString(l.Text)
			sb.WriteByte('\n')
		}
	}
	return sb.String(), true
}

// hunkRange is a hunk header's start,count ("start" alone for one line).
func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
