package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// TestLoadAgentsKeepsNewestEvents compares LoadAgents with the per-agent
// query it replaced (every event within keepEvents sequence numbers of the
// agent's newest), over agents with no events, fewer than kept, gaps in
// their sequence numbers (rows trimmed or lost), and more than kept.
func TestLoadAgentsKeepsNewestEvents(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Now().UTC()
	b := store.Batch{Events: map[[16]byte][]store.Event{}}
	for i := range 60 {
		uid := [16]byte{byte(i * 37), byte(i)}
		b.Agents = append(b.Agents, store.Agent{UID: uid, Credential: store.Credential{Kind: "token", ID: fmt.Sprint(i % 3)},
			Kind: []string{"collector", "updater", "unknown"}[i%3], Description: []byte{byte(i)}, Capabilities: uint64(i),
			Health: []byte{1, byte(i)}, TokenLabels: map[string]string{"i": fmt.Sprint(i)}, FirstSeen: now, LastSeen: now.Add(time.Duration(i)),
			Extra: []byte(fmt.Sprintf(`{"n":%d}`, i))})
		seq := uint64(0)
		for range rng.IntN(12) {
			seq += uint64(1 + rng.IntN(3)) // gaps
			b.Events[uid] = append(b.Events[uid], store.Event{Seq: seq, Time: now.Add(time.Duration(seq)), Type: fmt.Sprint("t", seq%4), Message: fmt.Sprint("m", i, seq)})
		}
	}
	if err := db.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []int{0, 1, 5, 200} {
		agents, events, err := db.LoadAgents(ctx, keep)
		if err != nil {
			t.Fatal(err)
		}
		if len(agents) != len(b.Agents) {
			t.Fatalf("keep %d: %d agents, want %d", keep, len(agents), len(b.Agents))
		}
		byUID := map[[16]byte]store.Agent{}
		for _, a := range agents {
			byUID[a.UID] = a
		}
		for _, w := range b.Agents {
			if g := byUID[w.UID]; !reflect.DeepEqual(g, w) {
				t.Fatalf("agent %x read back as %+v, want %+v", w.UID, g, w)
			}
		}
		want := oldLoadEvents(t, db, keep)
		for uid, evs := range events {
			if len(evs) == 0 {
				t.Fatalf("keep %d: agent %x has an empty event list", keep, uid)
			}
		}
		if !reflect.DeepEqual(events, want) {
			t.Fatalf("keep %d: events\n%v\nwant\n%v", keep, events, want)
		}
	}
}

// oldLoadEvents is the query LoadAgents used before.
func oldLoadEvents(t *testing.T, d *DB, keep int) map[[16]byte][]store.Event {
	rows, err := d.db.Query(`SELECT uid, seq, time, type, message FROM events e
		 WHERE seq > (SELECT COALESCE(MAX(seq),0) FROM events WHERE uid = e.uid) - ?
		 ORDER BY uid, seq`, keep)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[[16]byte][]store.Event{}
	for rows.Next() {
		var uid []byte
		var e store.Event
		var ts, seq int64
		if err := rows.Scan(&uid, &seq, &ts, &e.Type, &e.Message); err != nil {
			t.Fatal(err)
		}
		e.Seq, e.Time = uint64(seq), time.Unix(0, ts).UTC()
		out[[16]byte(uid)] = append(out[[16]byte(uid)], e)
	}
	return out
}
