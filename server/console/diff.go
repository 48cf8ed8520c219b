package console

import "strings"

// Diff bounds: beyond them the console says the configs differ too much to
// show a diff, instead of spending the server's CPU or memory on it.
const (
	maxDiffLines = 50000 // lines of each side after the common prefix and suffix
	maxDiffEdits = 2000  // inserted plus deleted lines
	diffContext  = 3
)

// diffLine is one line of a unified diff: Op is ' ', '-' or '+'; Old and
// New are 1-based line numbers (0 where the line is not on that side).
type diffLine struct {
	Op       byte
	Old, New int
	Text     string
}

// diffHunk is a run of changes with their context.
type diffHunk struct {
	Lines []diffLine
}

// lineDiff compares two texts line by line (Myers' algorithm on what lies
// between their common prefix and suffix) and returns the changes with
// diffContext lines around them; ok is false when the texts are beyond the
// bounds.
func lineDiff(a, b string) (hunks []diffHunk, ok bool) {
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
	if len(mx) > maxDiffLines || len(my) > maxDiffLines {
		return nil, false
	}
	ops, ok := myers(mx, my)
	if !ok {
		return nil, false
	}
	var all []diffLine
	for i := 0; i < pre; i++ {
		all = append(all, diffLine{Op: ' ', Old: i + 1, New: i + 1, Text: x[i]})
	}
	oi, ni := pre, pre
	for _, op := range ops {
		switch op {
		case ' ':
			all = append(all, diffLine{Op: ' ', Old: oi + 1, New: ni + 1, Text: x[oi]})
			oi++
			ni++
		case '-':
			all = append(all, diffLine{Op: '-', Old: oi + 1, Text: x[oi]})
			oi++
		case '+':
			all = append(all, diffLine{Op: '+', New: ni + 1, Text: y[ni]})
			ni++
		}
	}
	for ; oi < len(x); oi, ni = oi+1, ni+1 {
		all = append(all, diffLine{Op: ' ', Old: oi + 1, New: ni + 1, Text: x[oi]})
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
// operations, or false when it needs more than maxDiffEdits edits. It keeps
// one frontier per edit distance (O(D²) memory).
func myers(x, y []string) ([]byte, bool) {
	n, m := len(x), len(y)
	max := min(n+m, maxDiffEdits)
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

// hunksOf keeps the changed lines with diffContext lines around them;
// changes closer than twice that share a hunk.
func hunksOf(all []diffLine) []diffHunk {
	var hunks []diffHunk
	for i := 0; i < len(all); {
		for i < len(all) && all[i].Op == ' ' {
			i++
		}
		if i == len(all) {
			break
		}
		start, last := max(0, i-diffContext), i
		for j := i; j < len(all) && j-last <= 2*diffContext; j++ {
			if all[j].Op != ' ' {
				last = j
			}
		}
		stop := min(len(all), last+diffContext+1)
		hunks = append(hunks, diffHunk{Lines: all[start:stop]})
		i = stop
	}
	return hunks
}
