package installtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

var (
	fakeOnce sync.Once
	fakeBin  []byte
	fakeErr  error
)

// FakeCollector returns the fake collector executable (testdata/
// fakecollector), built once per process, statically (it also runs in FROM
// scratch images).
func FakeCollector() ([]byte, error) {
	fakeOnce.Do(func() {
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
