package windows

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
)

// wine64 is Debian's wine64 loader (the package puts it off PATH).
const wine64 = "/usr/lib/wine/wine64"

// wine is a private Wine prefix for this test binary, never the user's:
// booted once, with the ProcessPrng shim Go's runtime needs, and the
// Windows builds the tests run in it.
type wine struct {
	prefix string
	bins   string // the Windows builds, as a host directory
}

// newWine makes a prefix under dir (boot is its first step, see boot).
func newWine(dir string) *wine {
	return &wine{prefix: filepath.Join(dir, "prefix"), bins: filepath.Join(dir, "bin")}
}

// boot creates the prefix, with the shim. The caller ends it with close,
// also when boot fails.
func (w *wine) boot(t testing.TB) {
	t.Helper()
	testenv.Tool(t, wine64, "wine64")
	gcc := testenv.Tool(t, "x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64")
	if err := os.MkdirAll(w.bins, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, errs, err := w.run(t, "wineboot", "--init"); err != nil {
		t.Fatalf("wineboot: %v\n%s%s", err, out, errs)
	}
	dll := filepath.Join(w.prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll")
	if out, err := exec.Command(gcc, "-shared", "-O2", "-o", dll, "shim/bcryptprimitives.c", "-ladvapi32").CombinedOutput(); err != nil {
		t.Fatalf("building the ProcessPrng shim: %v\n%s", err, out)
	}
}

// persist keeps the prefix's wineserver, and its service manager, running
// between programs until close: otherwise each program opens a new Wine
// session, whose service manager starts every automatic-start service
// again and may not yet see a service another session created.
//
// The session's first program starts the service manager, which with
// the services it starts inherits that program's Unix standard error and
// Wine debug channels: Wine keeps no Event Log, but its eventlog channel
// prints every report a service makes, so the services' Event Log entries
// are read back from services.log (see serviceLog).
func (w *wine) persist(t testing.TB) {
	t.Helper()
	w.close() // the server wineboot started ends; a persistent one replaces it
	cmd := exec.Command("/usr/lib/wine/wineserver", "-p")
	cmd.Env = w.env() // no pipe for its output: the server it forks would hold it open
	if err := cmd.Run(); err != nil {
		t.Fatalf("wineserver -p: %v", err)
	}
	logf, err := os.Create(w.serviceLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := w.command(ctx, "cmd", "/c", "exit")
	first.Env = append(first.Env, "WINEDEBUG=-all,+eventlog")
	first.Stderr = logf // a file: services.exe keeps it open
	if out, err := first.Output(); err != nil {
		t.Fatalf("starting the Wine session: %v\n%s", err, out)
	}
}

func (w *wine) serviceLogPath() string { return filepath.Join(filepath.Dir(w.prefix), "services.log") }

// serviceLog is what Wine's eventlog channel printed of the services'
// Event Log reports so far, one report a line:
// "<thread>:<trace|warn|err>:eventlog:ReportEventW L\"<text>\"".
func (w *wine) serviceLog() string {
	b, _ := os.ReadFile(w.serviceLogPath())
	return string(b)
}

// close stops the prefix's wineserver and every process it runs.
func (w *wine) close() {
	cmd := exec.Command("/usr/lib/wine/wineserver", "-k")
	cmd.Env = w.env()
	_ = cmd.Run()
}

func (w *wine) env() []string {
	return append(os.Environ(), "WINEPREFIX="+w.prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=")
}

func (w *wine) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, wine64, args...)
	cmd.Env = w.env()
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// build cross-compiles pkg for Windows into the prefix's bin directory.
func (w *wine) build(t testing.TB, pkg, name string) string {
	t.Helper()
	return w.goBuild(t, name, "build", "-o", filepath.Join(w.bins, name), pkg) // as make build's cross-build: its cache serves
}

// buildTest cross-compiles pkg's tests for Windows, for the Wine tier:
// with internal/testkit's deletion fallback (-tags winetest, which needs
// -checklinkname=0).
func (w *wine) buildTest(t testing.TB, pkg, name string) string {
	t.Helper()
	return w.goBuild(t, name, "test", "-c", "-tags", "winetest", "-ldflags=-checklinkname=0", "-o", filepath.Join(w.bins, name), pkg)
}

func (w *wine) goBuild(t testing.TB, name string, args ...string) string {
	t.Helper()
	out := filepath.Join(w.bins, name)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s for Windows: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}

// run runs a Windows program under Wine for at most a minute and returns
// its stdout and stderr. They go through files: the processes Wine starts
// beside a program (wineserver, services.exe) inherit its descriptors and
// outlive it, so a pipe would not end with it.
func (w *wine) run(t testing.TB, exe string, args ...string) (string, string, error) {
	t.Helper()
	return w.runWith(t, time.Minute, nil, exe, args...)
}

// runWith is run with a timeout and more environment variables.
func (w *wine) runWith(t testing.TB, timeout time.Duration, env []string, exe string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		return "", "", err
	}
	defer outF.Close()
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		return "", "", err
	}
	defer errF.Close()
	cmd := w.command(ctx, append([]string{exe}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = outF, errF
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: no end within %s: %w", filepath.Base(exe), strings.Join(args, " "), timeout, ctx.Err())
	}
	out, _ := os.ReadFile(outF.Name())
	errs, _ := os.ReadFile(errF.Name())
	return string(out), string(errs), err
}

// drive is the host path of a Windows path on drive C: of the prefix.
func (w *wine) drive(winPath string) string {
	rel := strings.TrimPrefix(strings.ReplaceAll(winPath, `\`, "/"), "C:/")
	return filepath.Join(w.prefix, "drive_c", filepath.FromSlash(rel))
}

// winPath is a host path as the programs under Wine name it (drive Z: is /).
func winPath(hostPath string) string { return `Z:` + strings.ReplaceAll(hostPath, "/", `\`) }

var failRe = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// failures is what out, a test binary's -test.v output, says of its failed
// tests: for each, the lines it printed while it ran (from its "=== RUN",
// "=== CONT" or, a parallel test's, "=== NAME" to the next "=== " line),
// at most 3000 bytes each.
func failures(out string) string {
	var b strings.Builder
	lines := strings.Split(out, "\n")
	for _, m := range failRe.FindAllStringSubmatch(out, -1) {
		name := m[1]
		fmt.Fprintf(&b, "--- FAIL: %s\n", name)
		var block strings.Builder
		in := false
		for _, l := range lines {
			switch {
			case strings.TrimPrefix(l, "=== RUN   ") == name, strings.TrimPrefix(l, "=== CONT  ") == name,
				strings.TrimPrefix(l, "=== NAME  ") == name:
				in = true
			case strings.HasPrefix(l, "=== "):
				in = false
			case in:
				block.WriteString(l + "\n")
			}
		}
		b.WriteString(tail(block.String(), 3000))
	}
	return b.String()
}
