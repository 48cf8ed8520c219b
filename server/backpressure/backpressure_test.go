package backpressure

import (
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLimiter(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		advance    time.Duration // between calls
		calls      int
		wantAdmit  int
		wantRetry  time.Duration // Retry-After of the last refusal
		wantNoWait bool
	}{
		{name: "burst admitted at once", opts: Options{Rate: 10, Burst: 5}, calls: 5, wantAdmit: 5, wantNoWait: true},
		{name: "beyond the burst refused", opts: Options{Rate: 10, Burst: 5}, calls: 8, wantAdmit: 5, wantRetry: time.Second},
		{name: "refill at the rate", opts: Options{Rate: 10, Burst: 1}, advance: 100 * time.Millisecond, calls: 20, wantAdmit: 20, wantNoWait: true},
		{name: "Retry-After grows with the backlog", opts: Options{Rate: 10, Burst: 1}, calls: 1 + 35, wantAdmit: 1, wantRetry: 4 * time.Second},
		{name: "Retry-After is capped", opts: Options{Rate: 1, Burst: 1, MaxRetryAfter: 5 * time.Second}, calls: 100, wantAdmit: 1, wantRetry: 5 * time.Second},
		{name: "defaults", opts: Options{}, calls: 1001, wantAdmit: 1000, wantRetry: time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1000, 0)}
			tc.opts.Now = c.now
			l := New(tc.opts)
			admitted := 0
			var last time.Duration
			for i := 0; i < tc.calls; i++ {
				ok, wait := l.Admit()
				if ok {
					admitted++
					if wait != 0 {
						t.Fatalf("admitted with a wait of %s", wait)
					}
				} else {
					if wait < time.Second {
						t.Fatalf("refusal %d: Retry-After %s, want ≥ 1 s", i, wait)
					}
					last = wait
				}
				c.t = c.t.Add(tc.advance)
			}
			if admitted != tc.wantAdmit {
				t.Errorf("admitted %d of %d, want %d", admitted, tc.calls, tc.wantAdmit)
			}
			if tc.wantNoWait && last != 0 {
				t.Errorf("a refusal with Retry-After %s, want none", last)
			}
			if !tc.wantNoWait && last != tc.wantRetry {
				t.Errorf("last Retry-After %s, want %s", last, tc.wantRetry)
			}
		})
	}
}

func TestBacklogDrains(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := New(Options{Rate: 10, Burst: 1, Now: c.now})
	l.Admit()
	for i := 0; i < 50; i++ {
		l.Admit()
	}
	c.t = c.t.Add(10 * time.Second) // 100 admissions' worth: backlog paid, bucket full again
	if ok, _ := l.Admit(); !ok {
		t.Fatal("refused after the backlog drained")
	}
	ok, wait := l.Admit()
	if ok || wait != time.Second {
		t.Fatalf("got admit=%v wait=%s, want a refusal of 1 s with an empty backlog", ok, wait)
	}
}
