package rollout

import (
	"runtime"
	"testing"

	"github.com/google/uuid"
)

func TestWaves(t *testing.T) {
	w := New(3, func(s string) bool { return s == "done" || s == "failed" })
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	w.Set(a, 0, "pending")
	w.Set(b, 0, "pending")
	w.Set(c, 7, "pending") // clamped to the last wave
	if w.Total(2) != 1 || w.GateOpen(1) || w.FirstClosed() != 1 {
		t.Fatalf("total %d open %v first closed %d", w.Total(2), w.GateOpen(1), w.FirstClosed())
	}
	w.Set(a, 0, "done")
	if w.GateOpen(1) {
		t.Fatal("open with one member of wave 0 pending")
	}
	w.Set(b, 0, "failed")
	if !w.GateOpen(2) || w.FirstClosed() != 3 || w.Complete() {
		t.Fatalf("open %v first closed %d complete %v", w.GateOpen(2), w.FirstClosed(), w.Complete())
	}
	w.Set(b, 1, "pending") // moves wave: wave 0 is done, wave 1 holds wave 2
	if w.Total(0) != 1 || w.Counts(0)["failed"] != 0 || w.GateOpen(2) {
		t.Fatalf("after the move: %v %v", w.Counts(0), w.Counts(1))
	}
	w.Remove(b)
	w.Remove(b)
	w.Set(c, 2, "done")
	if !w.Complete() || w.Has(b) || !w.Has(c) {
		t.Fatal("remove")
	}
	n := 0
	for range w.MembersOf(2, 3) {
		n++
	}
	if n != 1 {
		t.Fatalf("members of wave 2: %d", n)
	}
	if New(0, nil).Len() != 1 {
		t.Fatal("at least one wave")
	}
}

// BenchmarkWavesHeld measures the memory a fleet's waves hold per member
// (every instance keeps them for every collector of a fleet).
func BenchmarkWavesHeld(b *testing.B) {
	const members = 50_000
	uids := make([]uuid.UUID, members)
	for i := range uids {
		uids[i] = uuid.New()
	}
	states := []string{"offered", "installing", "up_to_date", "failed"}
	var held float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		w := New(4, func(s string) bool { return s == "up_to_date" })
		for i, uid := range uids {
			w.Set(uid, i%4, states[i%len(states)])
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = float64(after.HeapAlloc-before.HeapAlloc) / members
		runtime.KeepAlive(w)
	}
	b.ReportMetric(held, "B/member")
}
