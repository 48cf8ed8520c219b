package installtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	fakeOnce sync.Once
	fakeBin  []byte
	fakeErr  error
)

// FakeCollectorEnv names a fake collector built beforehand for the
// system the tests run on: where no Go toolchain is (a Windows test binary
// under Wine), the tests read it instead of building one.
const FakeCollectorEnv = "MYRIARCH_FAKE_COLLECTOR"

// FakeCollector returns the fake collector executable (testdata/
// fakecollector), built once per process, statically (it also runs in FROM
// scratch images), or read from FakeCollectorEnv.
func FakeCollector() ([]byte, error) {
	fakeOnce.Do(func() {
		if path := os.Getenv(FakeCollectorEnv); path != "" {
			fakeBin, fakeErr = os.ReadFile(path)
			return
		}
		_, self, _, _ := runtime.Caller(0)
		fakeBin, fakeErr = BuildStatic(filepath.Join(filepath.Dir(self), "testdata", "fakecollector"))
	})
	return fakeBin, fakeErr
}

// BuildStatic builds the Go command in dir without cgo (for FROM scratch
// images) and without symbols (a third smaller: every artifact made of it
// is hashed, signed, packed and unpacked by the tests) and returns the
// executable.
func BuildStatic(dir string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "myriarch-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, filepath.Base(dir))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build %s: %w\n%s", dir, err, b)
	}
	return os.ReadFile(out)
}

// Binary is the fake collector that reports version and behaves as mode
// ("ok", "exit1", "crash", "lies"; see testdata/fakecollector). It panics
// when the fake cannot be built (a test cannot go on without it).
func Binary(version, mode string) []byte {
	bin, err := FakeCollector()
	if err != nil {
		panic(err)
	}
	b := append([]byte{}, bin...)
	return append(b, []byte("\nFAKECOL:"+version+":"+mode+"\n")...)
}

// NeedStandIns skips a test on Windows unless a fake collector built for
// Windows is given (FakeCollectorEnv): the stand-in binaries are built
// for the test's own system, and a Windows test binary has no Go
// toolchain to build them (the Wine tier, test/windows, gives one).
func NeedStandIns(t testing.TB) {
	t.Helper()
	if runtime.GOOS == "windows" && os.Getenv(FakeCollectorEnv) == "" {
		t.Skip("the stand-in binaries are built for the test's own system: set " + FakeCollectorEnv)
	}
}
