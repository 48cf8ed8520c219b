package testkit

import (
	"flag"
	"fmt"
	"os"
	"time"

	"go.uber.org/goleak"
)

// RunChecked runs a package's tests through run (m.Run, or a function that
// sets up and tears down around it) and returns the exit code for os.Exit.
// The code is 1, with the reason on standard error, when the tests passed but
// left something running behind them:
//   - a goroutine (goleak), or
//   - a process: on Linux the test process adopts every orphaned descendant
//     (it is made a child subreaper before run), so a process the tests
//     started, or one those started, that is still alive once run returns is
//     found even when its parent has exited. It is killed and reported.
//
// A test binary that reaches go test's -timeout panics without running
// cleanups; shortly before that (a tenth of the timeout, at most 30 s),
// RunChecked kills every process descended from it, so a hung test leaves
// no peers, supervisors or collectors running.
//
// Use it as: func TestMain(m *testing.M) { os.Exit(testkit.RunChecked(m.Run)) }
func RunChecked(run func() int, opts ...goleak.Option) int {
	if err := adoptOrphans(); err != nil {
		fmt.Fprintln(os.Stderr, "testkit: cannot adopt orphaned processes:", err)
		return 1
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, ok := f.Value.(flag.Getter).Get().(time.Duration); ok && d > 0 {
			watchdog := time.AfterFunc(d-min(d/10, 30*time.Second), func() {
				fmt.Fprintln(os.Stderr, "testkit: the test timeout is near; killing every process the tests started:")
				for _, p := range killDescendants() {
					fmt.Fprintln(os.Stderr, "  ", p)
				}
			})
			defer watchdog.Stop()
		}
	}
	code := run()
	if left := killSurvivors(); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "testkit: processes outlived the tests (now killed):")
		for _, p := range left {
			fmt.Fprintln(os.Stderr, "  ", p)
		}
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintln(os.Stderr, "testkit: goroutines outlived the tests:", err)
			code = 1
		}
	}
	return code
}
