package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Process runs the supervisor as the updater's child in its own process
// group, so stopping it also reaches the collector it started.
type Process struct {
	argv []string
	log  *slog.Logger

	// StopGrace is how long Stop waits after the interrupt before killing
	// the whole process group. Zero means 30s.
	StopGrace time.Duration
	// Output receives the supervisor's stdout and stderr (default os.Stderr).
	Output io.Writer

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd has exited
	stopping bool
	exited   chan error
}

var _ Controller = (*Process)(nil)

// NewProcess returns a controller that runs argv[0] with argv[1:].
func NewProcess(argv []string, log *slog.Logger) *Process {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Process{argv: argv, log: log, exited: make(chan error, 1)}
}

// Exited delivers the exit error (nil for exit status 0) whenever the
// supervisor exits without Stop having been called, so the caller can
// report it and start it again.
func (p *Process) Exited() <-chan error { return p.exited }

// Start launches the supervisor unless it is already running.
func (p *Process) Start(ctx context.Context) error {
	if len(p.argv) == 0 {
		return errors.New("supervisor: no command configured")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return nil
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	out := p.Output
	if out == nil {
		out = os.Stderr
	}
	cmd.Stdout, cmd.Stderr = out, out
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("supervisor: start %s: %w", p.argv[0], err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.stopping = cmd, done, false
	p.log.Info("supervisor started", "pid", cmd.Process.Pid, "command", p.argv)
	go p.wait(cmd, done)
	return nil
}

func (p *Process) wait(cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	p.mu.Lock()
	stopping := p.stopping
	if p.cmd == cmd {
		p.cmd = nil
	}
	p.mu.Unlock()
	close(done)
	if stopping {
		return
	}
	// The supervisor died on its own: make sure nothing it started lingers.
	_ = killGroup(cmd)
	p.log.Warn("supervisor exited unexpectedly", "pid", cmd.Process.Pid, "err", err)
	select {
	case p.exited <- exitError(err):
	default: // an unread notification is already pending
	}
}

func exitError(err error) error {
	if err == nil {
		return errors.New("supervisor exited with status 0")
	}
	return fmt.Errorf("supervisor exited: %w", err)
}

// Stop interrupts the supervisor (SIGINT to its process group), waits up to
// StopGrace (or ctx), then kills the group.
func (p *Process) Stop(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	if cmd == nil {
		p.mu.Unlock()
		return nil
	}
	p.stopping = true
	p.mu.Unlock()

	grace := p.StopGrace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	if err := interruptGroup(cmd); err != nil {
		p.log.Warn("supervisor: interrupt failed, killing", "pid", cmd.Process.Pid, "err", err)
	} else {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-done:
			_ = killGroup(cmd) // reap anything the supervisor left behind
			p.log.Info("supervisor stopped", "pid", cmd.Process.Pid)
			return nil
		case <-timer.C:
			p.log.Warn("supervisor did not stop after interrupt, killing its process group", "pid", cmd.Process.Pid, "grace", grace)
		case <-ctx.Done():
			p.log.Warn("supervisor stop interrupted, killing its process group", "pid", cmd.Process.Pid)
		}
	}
	if err := killGroup(cmd); err != nil {
		return fmt.Errorf("supervisor: kill pid %d: %w", cmd.Process.Pid, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("supervisor: pid %d did not exit after kill", cmd.Process.Pid)
	}
}

// Restart stops and starts the supervisor.
func (p *Process) Restart(ctx context.Context) error {
	if err := p.Stop(ctx); err != nil {
		return err
	}
	return p.Start(ctx)
}

// PID returns the running supervisor's process ID or 0.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}
