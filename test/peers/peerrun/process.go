package peerrun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Process is a peer program running in its own process group, with its
// standard output and error in a log file.
type Process struct {
	// LogPath holds the process's standard output and error.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	once sync.Once
}

// Start runs exe with args in its own process group, appending its output to
// logPath. env, when non-nil, is the complete environment.
func Start(exe string, args []string, env []string, logPath string) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("create log directory for %s: %w", logPath, err)
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", logPath, err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = env
	cmd.SysProcAttr = newGroupAttr()
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", exe, err)
	}
	p := &Process{LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

// StartSupervisor runs the OpAMP Supervisor executable with the config file,
// logging to logPath.
func StartSupervisor(supervisor, configPath, logPath string) (*Process, error) {
	return Start(supervisor, []string{"--config", configPath}, nil, logPath)
}

// Pid is the process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (nil for status 0). Valid after Done.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Interrupt sends SIGINT to the process (not its group): the supervisor
// then stops its collector itself.
func (p *Process) Interrupt() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	return interrupt(p.cmd.Process)
}

// Stop interrupts the process, waits up to grace for it to exit, and then
// kills its whole process group, so nothing it started survives. It returns
// an error if the process had to be killed. Safe to call more than once.
func (p *Process) Stop(grace time.Duration) error {
	var err error
	p.once.Do(func() {
		if ierr := p.Interrupt(); ierr != nil && !errors.Is(ierr, os.ErrProcessDone) {
			err = fmt.Errorf("interrupt pid %d: %w", p.Pid(), ierr)
		}
		select {
		case <-p.done:
		case <-time.After(grace):
			err = errors.Join(err, fmt.Errorf("pid %d did not exit within %v of SIGINT; killed", p.Pid(), grace))
		}
		killGroup(p.cmd.Process)
		<-p.done
	})
	return err
}

// Kill kills the whole process group at once (SIGKILL) and waits for the
// leader to exit.
func (p *Process) Kill() {
	killGroup(p.cmd.Process)
	<-p.done
}
