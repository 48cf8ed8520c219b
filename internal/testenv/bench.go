package testenv

import (
	"os"
	"strconv"
	"testing"
)

// BenchPairs is the number of collector/updater pairs a benchmark of
// myriarchd at scale registers: MYRIARCH_BENCH_PAIRS when set (a positive
// integer, else the benchmark fails), otherwise def.
func BenchPairs(tb testing.TB, def int) int {
	tb.Helper()
	s := os.Getenv("MYRIARCH_BENCH_PAIRS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		tb.Fatalf("MYRIARCH_BENCH_PAIRS=%q: want a positive integer", s)
	}
	return n
}
