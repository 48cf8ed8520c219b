//go:build !linux

package binary

import (
	"context"

	"github.com/shirou/gopsutil/v4/process"
)

// childProcesses lists p's direct children.
func childProcesses(ctx context.Context, p *process.Process) ([]*process.Process, error) {
	return p.ChildrenWithContext(ctx)
}
