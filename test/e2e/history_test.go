package e2e

import (
	"strings"
	"testing"

	"github.com/myriarch/myriarch/test/e2e/site"
)

// offerMovesBetween returns the offer events (offer_*) in the agent's
// history strictly between the last event of type from that precedes the
// last event of type to, and that event. A test proves that nothing was
// offered in a window by waiting for an event that ends it (ordered by the
// server, so no fixed wait is needed) and checking the history in between.
func offerMovesBetween(t *testing.T, a site.Agent, from, to string) []string {
	t.Helper()
	end := -1
	for i, ev := range a.Events {
		if ev.Type == to {
			end = i
		}
	}
	start := -1
	for i := 0; i < end; i++ {
		if a.Events[i].Type == from {
			start = i
		}
	}
	if start < 0 || end < 0 {
		var types []string
		for _, ev := range a.Events {
			types = append(types, ev.Type)
		}
		t.Fatalf("history has no %s followed by %s: %v", from, to, types)
	}
	var moves []string
	for _, ev := range a.Events[start+1 : end] {
		if strings.HasPrefix(ev.Type, "offer_") {
			moves = append(moves, ev.Type+": "+ev.Message)
		}
	}
	return moves
}
