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
		src := filepath.Join(filepath.Dir(self), "testdata", "fakecollector")
		dir, err := os.MkdirTemp("", "myriarch-fakecollector-")
		if err != nil {
			fakeErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "fakecollector")
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			fakeErr = fmt.Errorf("build fakecollector: %v\n%s", err, b)
			return
		}
		fakeBin, fakeErr = os.ReadFile(out)
	})
	return fakeBin, fakeErr
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
