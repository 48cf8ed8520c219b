package registry

import (
	"context"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
)

// A process presenting an agent's instance UID with another credential,
// over and over, leaves the agent's history as it was but for one
// identity_conflict event per credential a minute; the refusals not
// recorded one by one are counted in the next event of their credential.
func TestConflictEventsAreBounded(t *testing.T) {
	const history = 150 // events of the agent's own before the conflicts
	for _, tc := range []struct {
		name   string
		bursts []burst
		// sweepAt, when not zero, is when the registry's loop sweeps
		// (besides the sweeps RecordConflict makes).
		sweepAt    time.Duration
		wantEvents int
		wantCounts []int // the counts the events name, in order
	}{
		{name: "a flood within a minute", bursts: []burst{{0, "intruder", 500}}, wantEvents: 1},
		{name: "its count once the minute is over", bursts: []burst{{0, "intruder", 500}}, sweepAt: 61 * time.Second,
			wantEvents: 2, wantCounts: []int{499}},
		{name: "the next refusal after the minute names the count", bursts: []burst{{0, "intruder", 100}, {61 * time.Second, "intruder", 1}},
			wantEvents: 2, wantCounts: []int{99}},
		{name: "each credential its own", bursts: []burst{{0, "intruder", 300}, {time.Second, "other", 300}}, wantEvents: 2},
		{name: "a steady flood: one event a minute", bursts: everySecond(5*time.Minute, "intruder"), sweepAt: 6 * time.Minute,
			wantEvents: 6, wantCounts: []int{59, 60, 60, 60, 60}},
		{name: "one refusal a minute is each recorded", bursts: []burst{{0, "intruder", 1}, {time.Minute, "intruder", 1}, {2 * time.Minute, "intruder", 1}},
			sweepAt: 4 * time.Minute, wantEvents: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
			now := t0
			r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
				Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			uid := uuid.New()
			owner := store.Credential{Kind: "token", ID: "owner"}
			if _, err := r.Report(uid, owner, &protobufs.AgentToServer{AgentDescription: descNamed("otelcol")}, false, true); err != nil {
				t.Fatal(err)
			}
			for i := range history - 1 {
				r.AddEvent(uid, "note", "note "+strconv.Itoa(i))
			}
			refusals := 0
			for _, b := range tc.bursts {
				now = t0.Add(b.at)
				for range b.n {
					r.RecordConflict(uid, store.Credential{Kind: "token", ID: b.cred}, "192.0.2.1:40000")
					refusals++
				}
			}
			if tc.sweepAt != 0 {
				now = t0.Add(tc.sweepAt)
				r.sweepConflicts()
			}

			a, _ := r.Get(uid)
			own, conflicts, named := 0, 0, 0
			var counts []int
			more, summary := regexp.MustCompile(`(\d+) more`), regexp.MustCompile(`^refused \d+ more`)
			for _, e := range a.Events {
				if e.Type != EventIdentityConflict {
					own++
					continue
				}
				conflicts++
				named++
				if m := more.FindStringSubmatch(e.Message); m != nil {
					n, _ := strconv.Atoi(m[1])
					counts = append(counts, n)
					named += n
					if summary.MatchString(e.Message) {
						named-- // a count alone: the event stands for no refusal of its own
					}
				}
			}
			if own != history {
				t.Errorf("%d of the agent's %d own events left after %d refusals", own, history, refusals)
			}
			if conflicts != tc.wantEvents {
				t.Errorf("%d identity_conflict events for %d refusals, want %d", conflicts, refusals, tc.wantEvents)
			}
			if !slices.Equal(counts, tc.wantCounts) {
				t.Errorf("counts named %v, want %v", counts, tc.wantCounts)
			}
			if tc.sweepAt != 0 && named != refusals {
				t.Errorf("the events account for %d refusals, want all %d", named, refusals)
			}
		})
	}
}

// burst is n refusals of a credential at once, at a time after the first.
type burst struct {
	at   time.Duration
	cred string
	n    int
}

// everySecond is one refusal a second for d.
func everySecond(d time.Duration, cred string) []burst {
	var out []burst
	for at := time.Duration(0); at < d; at += time.Second {
		out = append(out, burst{at, cred, 1})
	}
	return out
}

// The pairs followed are bounded: past the bound a new pair's refusal is
// not recorded (nor followed) until windows end.
func TestConflictWindowsAreBounded(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	r, err := Load(context.Background(), &recordingStore{}, nil, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	intruder := store.Credential{Kind: "token", ID: "intruder"}
	for range maxConflictWindows {
		r.RecordConflict(uuid.New(), intruder, "192.0.2.1:1")
	}
	if r.RecordConflict(uuid.New(), intruder, "192.0.2.1:1") {
		t.Error("a pair past the bound was recorded")
	}
	if n := len(r.conflicts.windows); n != maxConflictWindows {
		t.Errorf("%d pairs followed, want %d", n, maxConflictWindows)
	}
	now = now.Add(conflictWindowLen)
	if !r.RecordConflict(uuid.New(), intruder, "192.0.2.1:1") {
		t.Error("a new pair not recorded once the windows ended")
	}
	if n := len(r.conflicts.windows); n != 1 {
		t.Errorf("%d pairs followed after the windows ended, want 1", n)
	}
}
