package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-version"
)

// ErrVersionCheck: the new executable failed its pre-activation check.
var ErrVersionCheck = errors.New("pre-activation version check failed")

// RunVersion runs `exe args…` with a timeout and returns its output.
func RunVersion(ctx context.Context, exe string, args []string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		text string
		err  error
	)
	// A file just written can be "busy" for a moment (see startBusy).
	for attempt := 1; ; attempt++ {
		text, err = runOnce(ctx, exe, args)
		if !startBusy(err) || attempt == 10 || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
	}
	if ctx.Err() == context.DeadlineExceeded {
		return text, fmt.Errorf("%w: `%s %s` did not finish within %s", ErrVersionCheck, exe, strings.Join(args, " "), timeout)
	}
	if err != nil {
		return text, fmt.Errorf("%w: `%s %s`: %w (output: %q)", ErrVersionCheck, exe, strings.Join(args, " "), err, Clip(text))
	}
	return text, nil
}

// CheckExecutable is the pre-activation check of a new executable: `exe
// args…` must finish within timeout, succeed, and name the version want.
func CheckExecutable(ctx context.Context, exe string, args []string, want string, timeout time.Duration) error {
	out, err := RunVersion(ctx, exe, args, timeout)
	if err != nil {
		return err
	}
	return CheckVersion(out, want)
}

func runOnce(ctx context.Context, exe string, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	var out limitedBuffer
	out.max = 64 << 10
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// CheckVersion requires the output of `--version` to name want, e.g.
// "otelcol-contrib version 0.149.0" (cobra's format, used by the collector).
func CheckVersion(output, want string) error {
	got := ParseVersion(output)
	if got == "" {
		return fmt.Errorf("%w: no version in output %q", ErrVersionCheck, Clip(output))
	}
	if !SameVersion(got, want) {
		return fmt.Errorf("%w: executable reports version %q, the offer says %q", ErrVersionCheck, got, want)
	}
	return nil
}

// ParseVersion returns the word after "version" on the first line that
// has one, or the last word of the first line.
func ParseVersion(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		f := strings.Fields(l)
		for i := 0; i+1 < len(f); i++ {
			if strings.EqualFold(f[i], "version") {
				return f[i+1]
			}
		}
	}
	if len(lines) > 0 {
		if f := strings.Fields(lines[0]); len(f) > 0 {
			return f[len(f)-1]
		}
	}
	return ""
}

// SameVersion reports whether two version strings name the same version
// (a leading v and equal semantic versions match).
func SameVersion(a, b string) bool {
	if strings.TrimPrefix(a, "v") == strings.TrimPrefix(b, "v") {
		return true
	}
	va, err1 := version.NewVersion(a)
	vb, err2 := version.NewVersion(b)
	return err1 == nil && err2 == nil && va.Equal(vb) && va.Prerelease() == vb.Prerelease()
}

// Clip shortens command output for an error message.
func Clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
