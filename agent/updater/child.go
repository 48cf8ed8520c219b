package updater

import (
	"context"
	"time"

	"github.com/myriarch/myriarch/agent/supervisor"
)

// childProcess is a supervisor the updater runs itself (control: process)
// and must restart when it dies.
type childProcess interface {
	supervisor.Controller
	Exited() <-chan error
}

var _ childProcess = (*supervisor.Process)(nil)

// superviseChild keeps the supervisor running: it is started, and restarted
// with a doubling delay (1 s … 1 min) whenever it exits on its own; the
// delay resets once a run has lasted a minute. Each exit is reported as
// unhealthy until the next start succeeds.
func (u *Updater) superviseChild(ctx context.Context, p childProcess) {
	const maxDelay = time.Minute
	delay := time.Second
	for {
		started := time.Now()
		err := p.Start(ctx)
		if err == nil {
			if u.health.set(componentSupervisor, nil) {
				u.pushHealth()
			}
			select {
			case <-ctx.Done():
				return
			case err = <-p.Exited():
			}
		}
		if ctx.Err() != nil {
			return
		}
		u.log.Error("supervisor is not running; restarting", "err", err, "in", delay)
		if u.health.set(componentSupervisor, err) {
			u.pushHealth()
		}
		if time.Since(started) >= maxDelay {
			delay = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, maxDelay)
	}
}
