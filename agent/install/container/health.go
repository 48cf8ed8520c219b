package container

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/agent/supervisorstate"
)

// healthGate passes when the container, on local signals only, runs for
// the health window without a restart, its Docker HEALTHCHECK (if the image
// or container has one) reports healthy, the supervisor health endpoint (if
// configured) answers 200, and the supervisor instance UID equals wantUID
// (if one was recorded before the swap).
func (b *Backend) healthGate(ctx context.Context, id, wantUID string) error {
	return b.judge(ctx, id, wantUID, "the new container", false)
}

// judge is the health gate of container id, called what in its errors.
// The health window starts now, or with fromStart when the container
// started (a container up for the window already passes at once).
func (b *Backend) judge(ctx context.Context, id, wantUID, what string, fromStart bool) error {
	first, err := b.docker.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return err
	}
	c0 := first.Container
	if c0.State == nil {
		return errors.New("the engine reports no state")
	}
	began := time.Now()
	start := began
	if fromStart {
		started, err := time.Parse(time.RFC3339Nano, c0.State.StartedAt)
		if err != nil {
			return fmt.Errorf("%s: start time %q: %w", what, c0.State.StartedAt, err)
		}
		start = started
	}
	windowEnd := start.Add(b.env.HealthWindow)
	deadline := later(windowEnd, time.Now()).Add(b.env.StartTimeout)
	hasCheck := c0.Config != nil && c0.Config.Healthcheck != nil && len(c0.Config.Healthcheck.Test) > 0 && c0.Config.Healthcheck.Test[0] != "NONE"
	var waiting string
	for {
		c, err := b.docker.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			return err
		}
		st := c.Container.State
		switch {
		case st == nil:
			return errors.New("the engine reports no state")
		case !st.Running || st.Restarting:
			return fmt.Errorf("%s stopped (status %s, exit code %d%s)%s", what, st.Status, st.ExitCode, errText(st.Error), b.tail(ctx, id))
		case c.Container.RestartCount != c0.RestartCount || st.StartedAt != c0.State.StartedAt:
			return fmt.Errorf("%s restarted (restart count %d)%s", what, c.Container.RestartCount, b.tail(ctx, id))
		case hasCheck && st.Health != nil && st.Health.Status == container.Unhealthy:
			return fmt.Errorf("Docker HEALTHCHECK reports unhealthy (%d failures)%s", st.Health.FailingStreak, lastProbe(st.Health))
		}
		now := time.Now()
		if !now.Before(windowEnd) {
			waiting = ""
			if hasCheck && (st.Health == nil || st.Health.Status != container.Healthy) {
				waiting = "Docker HEALTHCHECK to report healthy"
			}
			if waiting == "" && b.o.HealthcheckURL != "" {
				if err := probe(ctx, b.o.HealthcheckURL); err != nil {
					waiting = "the supervisor health endpoint: " + err.Error()
				}
			}
			if waiting == "" && wantUID != "" {
				got, err := b.instanceUID(ctx, id)
				switch {
				case err != nil:
					waiting = "the supervisor instance UID: " + err.Error()
				case got != wantUID:
					return fmt.Errorf("the supervisor instance UID changed from %s to %s: its storage dir did not carry over", wantUID, got)
				}
			}
			if waiting == "" {
				return nil
			}
			if now.After(deadline) {
				return fmt.Errorf("gave up waiting for %s after %s", waiting, now.Sub(began).Round(time.Second))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.env.PollInterval):
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func errText(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

func lastProbe(h *container.Health) string {
	if h == nil || len(h.Log) == 0 || h.Log[len(h.Log)-1] == nil {
		return ""
	}
	last := h.Log[len(h.Log)-1]
	out := strings.TrimSpace(last.Output)
	if out == "" {
		return fmt.Sprintf("; last probe exited %d", last.ExitCode)
	}
	return fmt.Sprintf("; last probe exited %d: %s", last.ExitCode, truncate(out, 200))
}

// tail returns the last lines of a container's log, for the failure report.
func (b *Backend) tail(ctx context.Context, id string) string {
	rc, err := b.docker.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "5"})
	if err != nil {
		return ""
	}
	defer rc.Close()
	buf, _ := io.ReadAll(io.LimitReader(rc, 4096))
	// Strip the 8-byte multiplexing headers of non-TTY logs.
	var out []byte
	for len(buf) >= 8 && (buf[0] == 1 || buf[0] == 2) {
		n := int(buf[4])<<24 | int(buf[5])<<16 | int(buf[6])<<8 | int(buf[7])
		buf = buf[8:]
		n = min(n, len(buf))
		out, buf = append(out, buf[:n]...), buf[n:]
	}
	out = append(out, buf...)
	if len(out) == 0 {
		return ""
	}
	return "; last log lines: " + truncate(string(out), 400)
}

func probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

// instanceUID reads the supervisor's persistent_state.yaml from inside a
// container (running or stopped) through the engine, so it works wherever
// the updater itself runs.
func (b *Backend) instanceUID(ctx context.Context, id string) (string, error) {
	p := path.Join(b.o.StorageDir, supervisorstate.FileName)
	res, err := b.docker.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: p})
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	if h.Size > 64<<10 {
		return "", fmt.Errorf("read %s: %d bytes, too large", p, h.Size)
	}
	data, err := io.ReadAll(io.LimitReader(tr, 64<<10))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	st, err := supervisorstate.Parse(p, data)
	if err != nil {
		return "", err
	}
	return st.InstanceID, nil
}
