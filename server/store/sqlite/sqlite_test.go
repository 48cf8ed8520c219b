package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, _ := tokens.New("edge", map[string]string{"wave": "1"}, time.Now())
	if err := db.InsertToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	dup, _, _ := tokens.New("edge", nil, time.Now())
	if err := db.InsertToken(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate name: err = %v, want ErrConflict", err)
	}
	if err := db.RevokeToken(ctx, tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeToken(ctx, "nope", time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	uid := [16]byte{1, 2, 3}
	now := time.Now().UTC().Truncate(time.Millisecond)
	b := store.Batch{
		Agents:    []store.Agent{{UID: uid, Credential: store.Credential{Kind: "token", ID: tok.ID}, Kind: "collector", Description: []byte{1}, Capabilities: 5, TokenLabels: map[string]string{"wave": "1"}, FirstSeen: now, LastSeen: now}},
		Events:    map[[16]byte][]store.Event{},
		KeepEvent: 3,
	}
	for i := 1; i <= 5; i++ {
		b.Events[uid] = append(b.Events[uid], store.Event{Seq: uint64(i), Time: now, Type: "t", Message: fmt.Sprint(i)})
	}
	if err := db.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Minute)
	if err := db.Write(ctx, store.Batch{LastSeen: map[[16]byte]time.Time{uid: later}}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutState(ctx, "rollout/edge", []byte("x")); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	toks, err := db.ListTokens(ctx)
	if err != nil || len(toks) != 1 || !toks[0].Revoked() || toks[0].Labels["wave"] != "1" {
		t.Fatalf("tokens after reopen: %+v, %v", toks, err)
	}
	agents, events, err := db.LoadAgents(ctx, 3)
	if err != nil || len(agents) != 1 {
		t.Fatalf("agents: %v %v", agents, err)
	}
	if !agents[0].LastSeen.Equal(later) || agents[0].Kind != "collector" || agents[0].Capabilities != 5 {
		t.Fatalf("agent = %+v", agents[0])
	}
	evs := events[uid]
	if len(evs) != 3 || evs[0].Message != "3" || evs[2].Message != "5" {
		t.Fatalf("events = %+v", evs)
	}
	if v, err := db.GetState(ctx, "rollout/edge"); err != nil || string(v) != "x" {
		t.Fatalf("state = %q %v", v, err)
	}
	if _, err := db.GetState(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing state: %v", err)
	}
	if m, err := db.ListState(ctx, "rollout/"); err != nil || len(m) != 1 {
		t.Fatalf("list state = %v %v", m, err)
	}
}
