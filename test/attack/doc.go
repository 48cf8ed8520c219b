// Package attack is the attack suite of myriarchd and myriarch-updater: each
// test runs real binaries on loopback (built from this tree by TestMain, or
// those named by MYRIARCH_ATTACK_BIN_DIR) and attacks them the way a hostile
// peer would, bounded in count and time, asserting that the server holds.
// Tests whose attack is also a measurement (the memory an attack costs)
// log a "figure:" line; BENCHMARKS.md records them.
//
//	go test -race -v -run . ./test/attack/ | grep figure:
//
// It runs on Linux (it reads /proc and signals processes).
package attack
