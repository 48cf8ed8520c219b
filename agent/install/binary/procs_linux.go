package binary

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/shirou/gopsutil/v4/process"
)

// childProcesses lists p's direct children from the kernel's own lists
// (/proc/<pid>/task/<tid>/children): the health gate polls them several
// times a second, and a scan of every process on a busy host (gopsutil's
// way) costs in proportion to all its processes. A kernel without the lists
// (CONFIG_PROC_CHILDREN unset) gets the scan.
func childProcesses(ctx context.Context, p *process.Process) ([]*process.Process, error) {
	dir := "/proc/" + strconv.Itoa(int(p.Pid)) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var pids []int32
	for i, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			if i == 0 && os.IsNotExist(err) {
				if _, serr := os.Stat(dir + "/" + t.Name()); serr == nil {
					return p.ChildrenWithContext(ctx) // the task is there, its list is not
				}
			}
			continue // the thread ended meanwhile
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.ParseInt(f, 10, 32); err == nil {
				pids = append(pids, int32(n))
			}
		}
	}
	slices.Sort(pids)
	out := make([]*process.Process, 0, len(pids))
	for _, pid := range slices.Compact(pids) {
		if np, err := process.NewProcessWithContext(ctx, pid); err == nil {
			out = append(out, np)
		}
	}
	return out, nil
}
