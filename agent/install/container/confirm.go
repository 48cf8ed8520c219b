package container

import (
	"context"
	"fmt"

	"github.com/myriarch/myriarch/agent/install"
)

var _ install.RunningConfirmer = (*Backend)(nil)

// ConfirmRunning implements install.RunningConfirmer with the health gate
// timed from the container's start: <name> runs without a restart for the
// health window (waiting out the rest of it when it started less than a
// window ago), its Docker HEALTHCHECK, if any, reports healthy, and the
// supervisor health endpoint, if configured, answers 200.
func (b *Backend) ConfirmRunning(ctx context.Context) error {
	if err := b.judge(ctx, b.o.Name, "", "the container", true); err != nil {
		return fmt.Errorf("container %s is not confirmed healthy: %w", b.o.Name, err)
	}
	return nil
}
