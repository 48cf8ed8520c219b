package notify

import (
	"fmt"
	"testing"
	"time"
)

// 500 failed collectors of a fleet within a window are one batch; other
// fleets and events have their own; a batch is due one window after it
// opened, and lists at most MaxItems.
func TestDebounceOneBatchPerFleetAndWindow(t *testing.T) {
	t0 := time.Unix(1796636312, 0)
	d := &Debouncer{Window: 30 * time.Second}
	for i := range 1500 {
		d.Add(Occurrence{Event: "config_failed", Fleet: "edge", Agent: fmt.Sprintf("a%04d", i), Message: "failed",
			Time: t0.Add(time.Duration(1499-i) * 10 * time.Millisecond)})
	}
	d.Add(Occurrence{Event: "config_failed", Fleet: "core", Agent: "b", Message: "failed", Time: t0.Add(time.Second)})
	d.Add(Occurrence{Event: "rollout_paused", Fleet: "edge", Message: "paused", Time: t0.Add(2 * time.Second)})
	d.Add(Occurrence{Event: "estate_reload_failed", Message: "bad", Time: t0.Add(20 * time.Second)})
	if due := d.Due(t0.Add(29 * time.Second)); len(due) != 0 {
		t.Fatalf("due before the window: %+v", due)
	}
	if at, ok := d.Next(); !ok || !at.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("next %v %v", at, ok)
	}
	due := d.Due(t0.Add(32 * time.Second))
	if len(due) != 3 {
		t.Fatalf("%d batches due, want 3", len(due))
	}
	edge := due[0]
	if edge.Event != "config_failed" || edge.Fleet != "edge" || edge.Count != 1500 || len(edge.Items) != MaxItems || edge.Omitted != 500 {
		t.Fatalf("edge batch: %s %s count %d items %d omitted %d", edge.Event, edge.Fleet, edge.Count, len(edge.Items), edge.Omitted)
	}
	if !edge.First.Equal(t0) || !edge.Last.Equal(t0.Add(14990*time.Millisecond)) {
		t.Fatalf("edge batch from %v to %v", edge.First, edge.Last)
	}
	for i := 1; i < len(edge.Items); i++ {
		if edge.Items[i].Time.Before(edge.Items[i-1].Time) {
			t.Fatal("items out of time order")
		}
	}
	if due[1].Fleet != "core" || due[2].Event != "rollout_paused" {
		t.Fatalf("order: %s/%s then %s/%s", due[1].Event, due[1].Fleet, due[2].Event, due[2].Fleet)
	}
	// The estate's batch opened later: due at its own time.
	rest := d.Due(t0.Add(50 * time.Second))
	if len(rest) != 1 || rest[0].Event != "estate_reload_failed" || rest[0].Fleet != "" || rest[0].Count != 1 {
		t.Fatalf("rest %+v", rest)
	}
	if _, ok := d.Next(); ok {
		t.Fatal("a batch still open")
	}
	// After a batch went out, the next occurrence opens a new one.
	d.Add(Occurrence{Event: "config_failed", Fleet: "edge", Agent: "a", Message: "again", Time: t0.Add(time.Minute)})
	if due := d.Due(t0.Add(time.Minute + 30*time.Second)); len(due) != 1 || due[0].Count != 1 {
		t.Fatalf("new window: %+v", due)
	}
}

// since lists what a batch gathered beyond an earlier state of it: the
// same occurrence twice stays once, the count covers the omitted ones.
func TestSince(t *testing.T) {
	t0 := time.Unix(1796636312, 0).UTC()
	it := func(agent string, s int) Item {
		return Item{Agent: agent, Message: "failed", Time: t0.Add(time.Duration(s) * time.Second)}
	}
	base := Batch{Event: "config_failed", First: t0, Count: 3, Items: []Item{it("a", 0), it("b", 1), it("b", 1)}}
	whole := Batch{Event: "config_failed", First: t0, Last: t0.Add(3 * time.Second), Count: 7,
		Items: []Item{it("a", 0), it("b", 1), it("b", 1), it("b", 1), it("c", 3)}, Omitted: 2}
	got := since(whole, base)
	if got.Count != 4 || got.Omitted != 2 || len(got.Items) != 2 || got.Items[0] != it("b", 1) || got.Items[1] != it("c", 3) ||
		!got.First.Equal(t0.Add(time.Second)) || !got.Last.Equal(whole.Last) {
		t.Fatalf("since: %+v", got)
	}
	if got := since(whole, Batch{}); got.Count != 7 || len(got.Items) != 5 {
		t.Fatalf("since nothing: %+v", got)
	}
}
