// Package rollouttest is what the tests of rolled-out things (package
// offers, package configs) share to drive an engine: a registry of agents
// on a store, a store that keeps nothing, a sender that counts, and an
// operator's call to the admin API.
package rollouttest

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
)

// Cred is the credential test agents connect with.
var Cred = store.Credential{Kind: "token", ID: "t"}

// Registry loads a registry of the agents st holds, its logs discarded.
// A zero opts.FlushInterval or opts.SeenInterval is an hour: the registry
// writes when the test says so.
func Registry(tb testing.TB, st store.Agents, opts registry.Options) *registry.Registry {
	tb.Helper()
	if opts.FlushInterval == 0 {
		opts.FlushInterval = time.Hour
	}
	if opts.SeenInterval == 0 {
		opts.SeenInterval = time.Hour
	}
	reg, err := registry.Load(context.Background(), st, nil, slog.New(slog.DiscardHandler), opts)
	if err != nil {
		tb.Fatal(err)
	}
	return reg
}

// Description describes an agent: its identifying attributes, then the
// others, each given as "key=value".
func Description(identifying []string, others ...string) *protobufs.AgentDescription {
	return &protobufs.AgentDescription{IdentifyingAttributes: keyValues(identifying), NonIdentifyingAttributes: keyValues(others)}
}

func keyValues(attrs []string) []*protobufs.KeyValue {
	out := make([]*protobufs.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		k, v, _ := strings.Cut(a, "=")
		out = append(out, testkit.KV(k, v))
	}
	return out
}

// NopStore is a store of agents and state that keeps nothing: it loads
// nothing, accepts every write and finds no state.
type NopStore struct{}

var (
	_ store.Agents = NopStore{}
	_ store.State  = NopStore{}
)

// LoadAgents implements store.Agents: there are none.
func (NopStore) LoadAgents(context.Context, int) ([]store.Agent, map[[16]byte][]store.Event, error) {
	return nil, nil, nil
}

// Write implements store.Agents, keeping nothing.
func (NopStore) Write(context.Context, store.Batch) error { return nil }

// PutState implements store.State, keeping nothing.
func (NopStore) PutState(context.Context, string, []byte) error { return nil }

// GetState implements store.State: store.ErrNotFound.
func (NopStore) GetState(context.Context, string) ([]byte, error) { return nil, store.ErrNotFound }

// DeleteState implements store.State.
func (NopStore) DeleteState(context.Context, string) error { return nil }

// ListState implements store.State: there is none.
func (NopStore) ListState(context.Context, string) (map[string][]byte, error) { return nil, nil }

// CountingSender counts the messages it is given to deliver (N), all
// delivered.
type CountingSender struct{ N atomic.Int64 }

// Send counts msg and reports it delivered.
func (s *CountingSender) Send(uuid.UUID, *protobufs.ServerToAgent) bool { s.N.Add(1); return true }

// Request serves one admin API call as an operator holding the bearer
// token, and returns the answer.
func Request(api http.Handler, method, path, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec
}
