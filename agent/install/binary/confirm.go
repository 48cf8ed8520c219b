package binary

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/myriarch/myriarch/agent/install"
)

var _ install.RunningConfirmer = (*Backend)(nil)

// ErrNotConfirmed: what runs did not show it is healthy.
var ErrNotConfirmed = errors.New("the running collector is not confirmed healthy")

// ConfirmRunning implements install.RunningConfirmer with the health
// gate's signals: the supervisor runs, one of its children runs
// <root>/current's executable, that same process has been up for the
// health window (waiting out the rest of it when it started less than a
// window ago), and the supervisor's healthcheck endpoint, when configured,
// answers 200.
func (b *Backend) ConfirmRunning(ctx context.Context) error {
	cur, err := readCurrent(b.o.Root)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotConfirmed, err)
	}
	if cur == "" {
		return fmt.Errorf("%w: %s/current does not exist", ErrNotConfirmed, b.o.Root)
	}
	exe := b.exeIn(cur)
	tick := time.NewTicker(b.env.PollInterval)
	defer tick.Stop()
	var seen int32
	for {
		sup := b.ctl.PID()
		if sup == 0 {
			return fmt.Errorf("%w: the supervisor is not running", ErrNotConfirmed)
		}
		var found *child
		for _, c := range children(ctx, sup) {
			if b.runsVersion(c.Exe, cur) {
				found = &c
				break
			}
		}
		switch {
		case found == nil:
			return fmt.Errorf("%w: no collector process runs %s", ErrNotConfirmed, exe)
		case seen != 0 && found.PID != seen:
			return fmt.Errorf("%w: the collector restarted within the health window", ErrNotConfirmed)
		case found.CreateTime <= 0:
			return fmt.Errorf("%w: the start time of collector process %d is unknown", ErrNotConfirmed, found.PID)
		}
		seen = found.PID
		if time.Since(time.UnixMilli(found.CreateTime)) >= b.env.HealthWindow {
			if b.o.HealthcheckURL == "" {
				return nil
			}
			if err := b.probeEndpoint(ctx); err != nil {
				return fmt.Errorf("%w: supervisor healthcheck %s: %w", ErrNotConfirmed, b.o.HealthcheckURL, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}
