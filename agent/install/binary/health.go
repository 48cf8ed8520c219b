package binary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// ErrUnhealthy: the activated collector did not pass the health gate.
var ErrUnhealthy = errors.New("health gate failed")

// waitStable is the health gate. It uses local signals only: the supervisor
// process is running, one of its children runs version dir's executable
// (the kernel-resolved path, so the old version cannot pass for the new
// one) and that same
// process stays up for window; more than MaxCollectorStarts distinct
// collector processes is a crash loop. With checkEndpoint, the supervisor's
// healthcheck endpoint must also answer 200 at the end of the window.
func (b *Backend) waitStable(ctx context.Context, dir string, window time.Duration, checkEndpoint bool) error {
	exe := b.exeIn(dir)
	deadline := time.Now().Add(b.env.StartTimeout + window)
	tick := time.NewTicker(b.env.PollInterval)
	defer tick.Stop()
	seen := map[procID]bool{}
	var cur procID
	var since time.Time
	lastOther := ""
	supMissing := 0
	var refused error // the healthcheck endpoint's last answer once the collector was up for window
	for {
		sup := b.ctl.PID()
		if sup == 0 {
			// Tolerate one missed poll: service managers report a restart gap.
			supMissing++
			if supMissing > 2 {
				return fmt.Errorf("%w: the supervisor is not running", ErrUnhealthy)
			}
		} else {
			supMissing = 0
			var found *child
			for _, c := range children(ctx, sup) {
				if b.runsVersion(c.Exe, dir) {
					found = &c
					break
				}
				lastOther = c.Exe
			}
			now := time.Now()
			switch {
			case found == nil:
				if cur != (procID{}) {
					b.rememberCrashLog()
				}
				cur = procID{}
			case !found.id().same(cur):
				if cur != (procID{}) {
					b.rememberCrashLog()
				}
				cur, since = found.id(), now
				if !seen[cur] {
					seen[cur] = true
					if len(seen) > b.o.MaxCollectorStarts {
						return fmt.Errorf("%w: the collector restarted (%d processes of %s seen; crash loop)", ErrUnhealthy, len(seen), exe)
					}
				}
			case now.Sub(since) >= window:
				if !checkEndpoint || b.o.HealthcheckURL == "" {
					return nil
				}
				err := b.probeEndpoint(ctx)
				if err == nil {
					return nil
				}
				refused = err
				if now.After(deadline) {
					return fmt.Errorf("%w: supervisor healthcheck %s: %v", ErrUnhealthy, b.o.HealthcheckURL, err)
				}
			}
		}
		if time.Now().After(deadline) {
			switch {
			case refused != nil:
				// The collector stayed up long enough; the endpoint said no.
				return fmt.Errorf("%w: supervisor healthcheck %s: %v", ErrUnhealthy, b.o.HealthcheckURL, refused)
			case len(seen) == 0 && lastOther != "":
				return fmt.Errorf("%w: no collector process runs %s within %s (the supervisor runs %s)", ErrUnhealthy, exe, b.env.StartTimeout, lastOther)
			case len(seen) == 0:
				return fmt.Errorf("%w: no collector process runs %s within %s", ErrUnhealthy, exe, b.env.StartTimeout)
			default:
				return fmt.Errorf("%w: the collector did not stay up for %s (%d process(es) seen)", ErrUnhealthy, window, len(seen))
			}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}

// maxCrashLog bounds the agent.log tail the gate keeps in memory.
const maxCrashLog = 64 << 10

// rememberCrashLog keeps the tail of agent.log, which holds the output of
// the collector process that just ended until the Supervisor starts the
// next one.
func (b *Backend) rememberCrashLog() {
	f, err := os.Open(filepath.Join(b.o.StorageDir, "agent.log"))
	if err != nil {
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return
	}
	if st.Size() > maxCrashLog {
		f.Seek(st.Size()-maxCrashLog, io.SeekStart)
	}
	if b2, err := io.ReadAll(io.LimitReader(f, maxCrashLog)); err == nil && len(b2) > 0 {
		b.crashLog = b2
	}
}

func (b *Backend) probeEndpoint(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.o.HealthcheckURL, nil)
	if err != nil {
		return err
	}
	// Local endpoint: never through a proxy.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}
