package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// procAttr is how the cluster's processes run: as whom.
type procAttr struct {
	cred *syscall.Credential
}

func postgresBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	// Debian keeps the server binaries off PATH, one directory per major version.
	found, _ := filepath.Glob(filepath.Join(debianPostgres, "*/bin/postgres"))
	sort.Slice(found, func(i, j int) bool { return pgMajor(found[i]) > pgMajor(found[j]) })
	for _, p := range found {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "initdb")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", fmt.Errorf("the PostgreSQL server (initdb, postgres) is not installed: %s (or %s), or set %s to an existing server",
		installHint(postgresPackage), SetupCommand, PostgresEnv)
}

func pgMajor(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

func startCluster() (*Cluster, error) {
	bin, err := postgresBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "myriarch-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("nobody")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("an unprivileged user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.proc.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := c.initData(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.Start(); err != nil {
		c.stopAndRemove()
		return nil, err
	}
	return c, nil
}

// Every cluster of a test binary that stops its clusters at its end
// (RunWithPostgres) starts from a copy of one data directory that initdb
// made for the first: initdb costs seconds of CPU, a copy a fraction.
var (
	templateOnce sync.Once
	templateDir  string // guarded by templateOnce; removed by removeTemplate
	templateErr  error
)

// initData makes the cluster's data directory: initdb's, copied from the
// template when the test binary has one.
func (c *Cluster) initData() error {
	data := filepath.Join(c.dir, "data")
	if !hooked.Load() {
		return c.initdb(data)
	}
	templateOnce.Do(func() {
		t := &Cluster{bin: c.bin, proc: c.proc}
		if t.dir, templateErr = os.MkdirTemp("", "myriarch-pg-template-"); templateErr != nil {
			return
		}
		templateDir = t.dir
		if c.proc.cred != nil {
			if templateErr = os.Chown(t.dir, int(c.proc.cred.Uid), int(c.proc.cred.Gid)); templateErr != nil {
				return
			}
		}
		templateErr = t.initdb(filepath.Join(t.dir, "data"))
	})
	if templateErr != nil {
		return templateErr
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(templateDir, "data"), data).CombinedOutput(); err != nil {
		return fmt.Errorf("copying the template data directory: %w\n%s", err, out)
	}
	return nil
}

func (c *Cluster) initdb(data string) error {
	initdb := c.command(filepath.Join(c.bin, "initdb"), "-D", data, "-U", "myriarch",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// removeTemplate removes the template data directory, if one was made.
func removeTemplate() error {
	if templateDir == "" {
		return nil
	}
	return os.RemoveAll(templateDir)
}

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + c.bin + ":/usr/bin:/bin", "LC_ALL=C"}
	// If the test binary dies, its server goes too (immediate shutdown).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.proc.cred, Pdeathsig: syscall.SIGQUIT}
	return cmd
}

// Start starts the server (again) and waits until it accepts connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	if c.cmd != nil {
		c.mu.Unlock()
		return errors.New("already running")
	}
	// Tests need no durability against a machine crash: no fsync.
	cmd := c.command(filepath.Join(c.bin, "postgres"), "-D", filepath.Join(c.dir, "data"),
		"-k", c.dir, "-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "log_min_messages=warning")
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &lockedWriter{mu: &c.mu, w: out}, &lockedWriter{mu: &c.mu, w: out}
	if err := cmd.Start(); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	c.cmd, c.out = cmd, out
	c.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-exited:
			c.mu.Lock()
			c.cmd = nil
			c.mu.Unlock()
			return fmt.Errorf("postgres exited: %s", c.Log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections within 60s: %v\n%s", err, c.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts the server down the way `pg_ctl stop -m fast` does (SIGINT:
// sessions ended, a checkpoint written) and waits for it to exit.
func (c *Cluster) Stop() error { return c.signal(syscall.SIGINT) }

// Kill ends the server without a shutdown checkpoint (SIGQUIT: immediate
// shutdown; the next start recovers from the WAL).
func (c *Cluster) Kill() error { return c.signal(syscall.SIGQUIT) }

func (c *Cluster) signal(sig syscall.Signal) error {
	c.mu.Lock()
	cmd := c.cmd
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for syscall.Kill(cmd.Process.Pid, 0) == nil {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return errors.New("postgres did not stop within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func (c *Cluster) stopAndRemove() error {
	err := c.Stop()
	return errors.Join(err, os.RemoveAll(c.dir))
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Len() > 1<<20 {
		return len(p), nil // enough to explain a failure
	}
	return l.w.Write(p)
}
