package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"github.com/myriarch/myriarch/server/store"
)

// StateStore is where fleets' rollout states are kept (store.State): a
// key-value space shared by the instances of one store, in which only the
// leading instance writes (the others get store.ErrNotLeader).
type StateStore interface {
	PutState(ctx context.Context, key string, value []byte) error
	DeleteState(ctx context.Context, key string) error
	ListState(ctx context.Context, prefix string) (map[string][]byte, error)
}

// States keeps the rollout states of one rolled-out thing's fleets, each
// as JSON under prefix+fleet name. Its writes log their failures and
// return nothing: a state a leader could not write is decided again by
// the next one. It is safe for concurrent use as its store is.
type States struct {
	st     StateStore
	prefix string
	what   string
	log    *slog.Logger
}

// NewStates keeps states under prefix in st; what names them in logs
// (e.g. "rollout state").
func NewStates(st StateStore, prefix, what string, log *slog.Logger) *States {
	return &States{st: st, prefix: prefix, what: what, log: log}
}

// List reads the stored states, by fleet name, as stored.
func (s *States) List(ctx context.Context) (map[string][]byte, error) {
	raw, err := s.st.ListState(ctx, s.prefix)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(raw))
	for k, v := range raw {
		out[strings.TrimPrefix(k, s.prefix)] = v
	}
	return out, nil
}

// Put writes fleet's state v (marshalled as JSON).
func (s *States) Put(fleet string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.log.Error("encoding "+s.what+" failed", "fleet", fleet, "err", err)
		return
	}
	switch err := s.st.PutState(context.Background(), s.prefix+fleet, data); {
	case errors.Is(err, store.ErrNotLeader):
		s.log.Info(s.what+" not written: this instance no longer leads", "fleet", fleet)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		s.log.Error("persisting "+s.what+" failed", "fleet", fleet, "err", err)
	}
}

// Delete forgets fleet's state.
func (s *States) Delete(fleet string) {
	if err := s.st.DeleteState(context.Background(), s.prefix+fleet); err != nil && !errors.Is(err, store.ErrNotLeader) {
		s.log.Error("forgetting "+s.what+" failed", "fleet", fleet, "err", err)
	}
}

// Decode reads stored states (List's) into S, leaving out those that are
// unreadable.
func Decode[S any](raw map[string][]byte) map[string]S {
	out := make(map[string]S, len(raw))
	for name, data := range raw {
		var s S
		if json.Unmarshal(data, &s) == nil {
			out[name] = s
		}
	}
	return out
}
