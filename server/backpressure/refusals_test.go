package backpressure

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A source's refusals in a minute are one line, then their count; a new
// source has its own first line.
func TestRefusalLogSummary(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	l := NewRefusalLog(RefusalLogOptions{Log: slog.New(slog.NewTextHandler(&buf, nil)), Level: slog.LevelInfo,
		First: "refused agent connection;", More: "refused further agent connections from one source",
		Others: "refused agent connections from further sources", Now: func() time.Time { return now }})
	for range 50 {
		l.Refused("192.0.2.1", "remote", "192.0.2.1:1", "reason", errors.New("bad token"))
	}
	now = now.Add(61 * time.Second)
	l.Refused("192.0.2.2", "remote", "192.0.2.2:1", "reason", errors.New("bad token"))
	out := buf.String()
	if c := strings.Count(out, "refused agent connection;"); c != 2 {
		t.Errorf("%d first-refusal lines, want 2 (one per source):\n%s", c, out)
	}
	if !strings.Contains(out, `reason="bad token"`) || !strings.Contains(out, "remote=192.0.2.1:1") {
		t.Errorf("the first line lacks its attributes:\n%s", out)
	}
	if !strings.Contains(out, "source=192.0.2.1 count=49") {
		t.Errorf("no summary of the 49 further refusals:\n%s", out)
	}
}

// Beyond the sources followed at once, refusals are counted together.
func TestRefusalLogBeyondTheSourcesFollowed(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	l := NewRefusalLog(RefusalLogOptions{Log: slog.New(slog.NewTextHandler(&buf, nil)), Level: slog.LevelWarn,
		First: "first", More: "more", Others: "others", Now: func() time.Time { return now }})
	for i := range maxRefusalSources + 7 {
		l.Refused(SourceKey(fmt.Sprintf("10.0.%d.%d:1", i/256, i%256)))
	}
	now = now.Add(61 * time.Second)
	l.Refused("192.0.2.9")
	out := buf.String()
	if c := strings.Count(out, "msg=first"); c != maxRefusalSources+1 {
		t.Errorf("%d first lines, want %d", c, maxRefusalSources+1)
	}
	if !strings.Contains(out, "msg=others count=7") || !strings.Contains(out, "level=WARN") {
		t.Errorf("no warning of the 7 refusals beyond the sources followed in:\n%.300s", out[strings.LastIndex(out, "msg=first"):])
	}
}
