package registry

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/attributes"
	"github.com/myriarch/myriarch/server/store"
)

func identicalMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestLabelSetsShareEqualMapsOnly(t *testing.T) {
	tests := []struct {
		name  string
		a, b  map[string]string
		share bool
	}{
		{"equal", map[string]string{"site": "edge", "region": "eu"}, map[string]string{"region": "eu", "site": "edge"}, true},
		{"value differs", map[string]string{"site": "edge"}, map[string]string{"site": "core"}, false},
		{"boundary moved", map[string]string{"a": "bc"}, map[string]string{"ab": "c"}, false},
		{"extra key", map[string]string{"a": "1"}, map[string]string{"a": "1", "b": ""}, false},
		{"empty value vs none", map[string]string{"a": ""}, map[string]string{"a": "", "": ""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s labelSets
			a, b := s.share(tt.a), s.share(tt.b)
			if !identicalMap(a, tt.a) {
				t.Fatal("the first map of its contents is not the one kept")
			}
			if got := identicalMap(a, b); got != tt.share {
				t.Fatalf("shared = %v, want %v", got, tt.share)
			}
			if !reflect.DeepEqual(b, tt.b) {
				t.Fatalf("share(%v) = %v", tt.b, b)
			}
		})
	}
}

func TestLabelSetsBounded(t *testing.T) {
	var s labelSets
	for i := range maxLabelSets + 10 {
		s.share(map[string]string{"n": fmt.Sprint(i)})
	}
	if len(s.sets) != maxLabelSets {
		t.Fatalf("%d sets kept, want %d", len(s.sets), maxLabelSets)
	}
	over := map[string]string{"n": "beyond"}
	if got := s.share(over); !identicalMap(got, over) || len(s.sets) != maxLabelSets {
		t.Fatal("a set past the bound is not returned unshared")
	}
	if got := s.share(map[string]string{"n": "0"}); got["n"] != "0" {
		t.Fatalf("a known set is returned as %v", got)
	}
}

// Agents with equal labels share one map, and relabelling one of them (its
// own inventory entry) leaves the others' labels as they were.
func TestAgentsShareLabelSets(t *testing.T) {
	r, err := Load(context.Background(), &recordingStore{}, fakeTokens{"t1": "north"}, slog.New(slog.DiscardHandler),
		Options{FlushInterval: time.Hour, SeenInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	uids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	for _, uid := range uids {
		if _, err := r.Report(uid, store.Credential{Kind: "token", ID: "t1"}, &protobufs.AgentToServer{AgentDescription: &protobufs.AgentDescription{}}, false, true); err != nil {
			t.Fatal(err)
		}
	}
	r.SetInventory(Inventory{ByToken: map[string]map[string]string{"north": {"wave": "1"}}})
	peek := func(uid uuid.UUID) Agent { a, _ := r.Peek(uid); return a }
	first := peek(uids[0])
	for _, uid := range uids[1:] {
		if !identicalMap(peek(uid).Labels, first.Labels) {
			t.Fatalf("agent %v has its own labels map %v", uid, peek(uid).Labels)
		}
	}
	r.SetInventory(Inventory{ByToken: map[string]map[string]string{"north": {"wave": "1"}}, ByUID: map[uuid.UUID]map[string]string{uids[2]: {"wave": "2"}}})
	want := map[string]string{"from": "token", "wave": "1"}
	for _, uid := range uids[:2] {
		if got := peek(uid).Labels; !reflect.DeepEqual(got, want) {
			t.Fatalf("agent %v labels %v after another agent's relabel, want %v", uid, got, want)
		}
	}
	if got := peek(uids[2]).Labels; got["wave"] != "2" || got["from"] != "token" {
		t.Fatalf("relabelled agent labels %v", got)
	}
	if got := peek(uids[2]).Attributes.Value(attributes.LabelPrefix + "wave"); got != "2" {
		t.Fatalf("relabelled agent's view has wave %q", got)
	}
}
