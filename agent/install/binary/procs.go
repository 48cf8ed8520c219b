package binary

import (
	"context"
	"path/filepath"

	"github.com/shirou/gopsutil/v4/process"
)

// child is one direct child process of the supervisor.
type child struct {
	PID        int32
	Exe        string
	CreateTime int64
}

// procID tells one process from another: its PID, and its start time,
// since a PID is soon given again to a new process (Windows, and Wine
// more so, reuse them at once), and a collector that crashes and is
// restarted under the same PID is another process.
type procID struct {
	PID        int32
	CreateTime int64
}

func (c child) id() procID { return procID{c.PID, c.CreateTime} }

// same says whether a and b are one process; a start time that could not
// be read (0) matches any.
func (a procID) same(b procID) bool {
	return a.PID == b.PID && (a.CreateTime == 0 || b.CreateTime == 0 || a.CreateTime == b.CreateTime)
}

// children lists the direct children of pid with their executable paths
// (resolved by the kernel, so a process started through <root>/current
// shows the version directory it really runs from).
func children(ctx context.Context, pid int) []child {
	if pid <= 0 {
		return nil
	}
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return nil
	}
	kids, err := childProcesses(ctx, p)
	if err != nil {
		return nil
	}
	out := make([]child, 0, len(kids))
	for _, k := range kids {
		exe, err := k.ExeWithContext(ctx)
		if err != nil {
			continue
		}
		if st, err := k.StatusWithContext(ctx); err == nil && len(st) > 0 && st[0] == process.Zombie {
			continue
		}
		ct, _ := k.CreateTimeWithContext(ctx)
		out = append(out, child{PID: k.Pid, Exe: exe, CreateTime: ct})
	}
	return out
}

// sameFile reports whether two executable paths are the same file.
// runsVersion says whether the running executable exe is version dir's:
// the version's own file, or the copy of it that current is where no
// junction could be made (Windows).
func (b *Backend) runsVersion(exe, dir string) bool {
	if sameFile(exe, b.exeIn(dir)) {
		return true
	}
	if !sameFile(exe, filepath.Join(b.o.Root, "current", b.o.Executable)) {
		return false
	}
	cur, err := readCurrent(b.o.Root)
	return err == nil && cur == dir
}

func sameFile(a, b string) bool {
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	if rb, err := filepath.EvalSymlinks(b); err == nil {
		b = rb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}
