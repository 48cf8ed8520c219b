package registry

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

func helloFrom(host string) *protobufs.AgentToServer {
	return &protobufs.AgentToServer{Capabilities: 1, AgentDescription: &protobufs.AgentDescription{
		IdentifyingAttributes: descNamed("otelcol").IdentifyingAttributes,
		NonIdentifyingAttributes: []*protobufs.KeyValue{{Key: HostKey,
			Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: host}}}}}}
}

// replacements records what OnReplacedElsewhere says.
type replacements struct {
	mu  sync.Mutex
	got []ReplacedElsewhere
}

func (r *replacements) add(e ReplacedElsewhere) { r.mu.Lock(); r.got = append(r.got, e); r.mu.Unlock() }

func (r *replacements) take() []ReplacedElsewhere {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// An agent connected here whose row (merged from the store) names another
// instance: a connection there that opened later replaces the ones here
// (the connection layer is told, the row is merged, and once they close
// the agent stays connected there); one that opened earlier, or none,
// makes this instance write the row again.
func TestRowNamingAnotherInstance(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		instance string // the row's
		at       time.Duration
		replaced bool
	}{
		{"this instance", "me", 0, false},
		{"a later connection elsewhere", "other", time.Second, true},
		{"an earlier connection elsewhere", "other", -time.Second, false},
		{"none", "", 0, false},
		{"as old, from an instance sorting before", "a", 0, false},
		{"as old, from an instance sorting after", "zz", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			st := &recordingStore{}
			r, err := Load(context.Background(), st, nil, slog.New(slog.DiscardHandler),
				Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Instance: "me", Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var reps replacements
			r.OnReplacedElsewhere(reps.add)
			uid := uuid.New()
			cred := store.Credential{Kind: "token", ID: "t1"}
			res, err := r.Report(uid, cred, helloFrom("host-here"), false, true)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Opened.Equal(t0) {
				t.Fatalf("connection opened at %v, want %v", res.Opened, t0)
			}
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			st.batches = nil
			now = t0.Add(2 * time.Second)

			row := store.Agent{UID: uid, Credential: cred, Kind: string(KindUnknown), FirstSeen: t0, LastSeen: now,
				Description: encodeDescription(map[string]string{"service.name": "otelcol"}, map[string]string{HostKey: "host-there"}),
				Instance:    tc.instance, ConnectedAt: t0.Add(tc.at)}
			r.Merge([]store.Agent{row}, nil, func(t time.Time) time.Time { return t.Add(time.Minute) })
			got := reps.take()
			instance, replacedBy := r.ReplacedBy(uid)
			a, _ := r.Get(uid)
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			var written []time.Time
			for _, b := range st.batches {
				for u, at := range b.Connected {
					if u == uid {
						written = append(written, at)
					}
				}
			}

			if !tc.replaced {
				if len(got) != 0 || replacedBy {
					t.Fatalf("replaced by %v (ReplacedBy %q %t), want not", got, instance, replacedBy)
				}
				if a.Host != "host-here" || !a.Connected {
					t.Errorf("the agent connected here shows %q, connected %t", a.Host, a.Connected)
				}
				if rewrite := tc.instance != "me"; rewrite != (len(written) == 1) || (rewrite && !written[0].Equal(t0)) {
					t.Errorf("the row written to name this instance %v, want it written (opened %v): %t", written, t0, rewrite)
				}
				if len(r.Connected([]uuid.UUID{uid})) != 1 || r.Elsewhere(uid) {
					t.Error("the agent does not count as connected here")
				}
				return
			}
			want := ReplacedElsewhere{UID: uid, Opened: t0, Instance: tc.instance}
			if len(got) != 1 || got[0] != want {
				t.Fatalf("told %v, want %v", got, want)
			}
			if instance != tc.instance || !replacedBy {
				t.Errorf("ReplacedBy = %q %t, want %q", instance, replacedBy, tc.instance)
			}
			if a.Host != "host-there" {
				t.Errorf("the replaced agent shows %q, want the row's description", a.Host)
			}
			if len(written) != 0 {
				t.Errorf("the row written again to name this instance, at %v", written)
			}
			if len(r.Connected([]uuid.UUID{uid})) != 0 || !r.Elsewhere(uid) {
				t.Error("the replaced agent counts as connected here, not to the other instance")
			}
			// The connection here closes; the agent stays on the other instance.
			r.Disconnected(uid)
			if a, _ := r.Peek(uid); !a.Online || a.Connected || !r.Elsewhere(uid) {
				t.Errorf("after its replaced connection closed: online %t, connected %t, elsewhere %t", a.Online, a.Connected, r.Elsewhere(uid))
			}
			// A connection here again is the agent's newest.
			now = now.Add(time.Second)
			if _, err := r.Report(uid, cred, &protobufs.AgentToServer{SequenceNum: 1}, false, true); err != nil {
				t.Fatal(err)
			}
			if _, ok := r.ReplacedBy(uid); ok || r.Elsewhere(uid) {
				t.Error("a connection here after the replacement counts as replaced")
			}
		})
	}
}

// Two instances on one store each see the agent connect, at nearly the
// same time: whichever writes first and whenever each reads the row, the
// instance of the older connection (only) is told to close it, and both
// end with the row naming the newer one.
func TestNewerConnectionWinsWhateverTheOrder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		olderFirst bool // the instance of the older connection writes first
		readEach   bool // each instance reads the row after each write, not only at the end
	}{
		{"older writes first", true, false},
		{"newer writes first", false, false},
		{"older writes first, read after each write", true, true},
		{"newer writes first, read after each write", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := sqlite.Open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var mu sync.Mutex
			now := time.Unix(1700000000, 0).UTC()
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			advance := func() { mu.Lock(); now = now.Add(time.Millisecond); mu.Unlock() }
			reps := map[string]*replacements{}
			open := func(instance string) *Registry {
				r, err := Load(ctx, db, nil, slog.New(slog.DiscardHandler),
					Options{FlushInterval: time.Hour, SeenInterval: time.Hour, Now: clock, Instance: instance})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				reps[instance] = &replacements{}
				r.OnReplacedElsewhere(reps[instance].add)
				return r
			}
			older, newer := open("older"), open("newer")
			cred := store.Credential{Kind: "token", ID: "t1"}
			uid := uuid.New()
			if _, err := older.Report(uid, cred, helloFrom("host-older"), false, true); err != nil {
				t.Fatal(err)
			}
			advance()
			if _, err := newer.Report(uid, cred, helloFrom("host-newer"), false, true); err != nil {
				t.Fatal(err)
			}
			read := func() {
				recs, events, err := db.LoadAgents(ctx, MaxEvents)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range []*Registry{older, newer} {
					r.Merge(recs, events, func(t time.Time) time.Time { return t.Add(time.Minute) })
				}
			}
			order := []*Registry{newer, older}
			if tc.olderFirst {
				order = []*Registry{older, newer}
			}
			for _, r := range order {
				if err := r.Flush(); err != nil {
					t.Fatal(err)
				}
				if tc.readEach {
					read()
				}
			}
			// What each wrote since, and read again.
			for range 2 {
				read()
				for _, r := range order {
					if err := r.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := reps["older"].take(); len(got) != 1 || got[0].Instance != "newer" {
				t.Errorf("the instance of the older connection was told %v, want once, of the newer", got)
			}
			if got := reps["newer"].take(); len(got) != 0 {
				t.Errorf("the instance of the newer connection was told %v", got)
			}
			recs, _, err := db.LoadAgents(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].Instance != "newer" {
				t.Fatalf("the row names %q, want the newer connection's instance", recs[0].Instance)
			}
			if a, _ := older.Peek(uid); a.Host != "host-newer" {
				t.Errorf("the instance of the older connection shows %q, want the newer one's description", a.Host)
			}
		})
	}
}
