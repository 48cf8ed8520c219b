//go:build unix

package binary

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/myriarch/myriarch/internal/testkit"
)

// The kernel's children lists give what a scan of every process gives.
func TestChildProcessesMatchAScan(t *testing.T) {
	sh := exec.Command("sh", "-c", "sleep 60 & sleep 60 & sleep 60 & wait")
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("pkill", "-P", strconv.Itoa(sh.Process.Pid)).Run()
		sh.Process.Kill()
		sh.Wait()
	})
	p, err := process.NewProcess(int32(sh.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	pids := func(ps []*process.Process) []int32 {
		var out []int32
		for _, c := range ps {
			out = append(out, c.Pid)
		}
		return out
	}
	ctx := context.Background()
	testkit.WaitWithin(t, 10*time.Second, "three children", func() bool {
		kids, err := childProcesses(ctx, p)
		return err == nil && len(kids) == 3
	})
	fromLists, err := childProcesses(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	scanned, err := p.ChildrenWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := pids(fromLists), pids(scanned); !slices.Equal(a, b) {
		t.Fatalf("children lists %v, scan %v", a, b)
	}
	if got := children(ctx, sh.Process.Pid); len(got) != 3 || got[0].Exe == "" {
		t.Fatalf("children %+v", got)
	}
	exec.Command("pkill", "-P", strconv.Itoa(sh.Process.Pid)).Run()
	sh.Wait()
	if _, err := childProcesses(ctx, p); err == nil {
		t.Fatal("a process that ended has children")
	}
}
