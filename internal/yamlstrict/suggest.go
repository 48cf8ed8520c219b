package yamlstrict

import "fmt"

// suggest proposes the closest known key for a likely typo.
func suggest(key string, keys map[string]int) string {
	best, bestD := "", 3
	for name := range keys {
		dd := editDistance(key, name)
		if dd < bestD || (dd == bestD && best != "" && name < best) {
			best, bestD = name, dd
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
