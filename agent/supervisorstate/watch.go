package supervisorstate

import (
	"bytes"
	"context"
	"time"
)

// DefaultInterval is how often Watch looks at the file. Polling (rather than
// inotify) survives the supervisor's atomic rename rewrites, a storage dir
// that appears late, and works the same on every OS; the file is tiny.
const DefaultInterval = 2 * time.Second

// Watch calls onChange with the current state (or the error reading it) right
// away and then whenever the file's content or the error changes, until ctx
// ends. onChange runs on Watch's goroutine. interval <= 0 means DefaultInterval.
func Watch(ctx context.Context, storageDir string, interval time.Duration, onChange func(State, error)) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	var (
		first   = true
		lastRaw []byte
		lastErr string
	)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		raw, err := readBounded(Path(storageDir))
		errText := ""
		if err != nil {
			errText = err.Error()
			raw = nil
		}
		if first || errText != lastErr || !bytes.Equal(raw, lastRaw) {
			first, lastRaw, lastErr = false, raw, errText
			if err != nil {
				onChange(State{}, err)
			} else {
				onChange(Parse(Path(storageDir), raw))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
