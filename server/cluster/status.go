package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/myriarch/myriarch/server/store"
)

// leaderKey is the store state key where the leader says who it is and
// which estate revision it runs.
const leaderKey = "cluster/leader"

// LeaderState is what the leader publishes.
type LeaderState struct {
	Instance       string    `json:"instance"`
	EstateRevision string    `json:"estateRevision"`
	Since          time.Time `json:"since"`
}

// key tells one leader from another: the same instance leading again is
// another leader (nil: "").
func (ls *LeaderState) key() string {
	if ls == nil {
		return ""
	}
	return ls.Instance + "@" + ls.Since.UTC().Format(time.RFC3339Nano)
}

// Status is this instance's view of the instances on the store
// (GET /api/v1/cluster).
type Status struct {
	Instance       string       `json:"instance"`
	Leading        bool         `json:"leading"`
	Leader         *LeaderState `json:"leader"`
	EstateRevision string       `json:"estateRevision"`
	// EstateMismatch: this instance runs another estate revision than the
	// leader (instances deployed with different estates).
	EstateMismatch bool `json:"estateMismatch"`
}

// checkLeader publishes the leader's state (when this instance leads and
// it changed) or reads it and compares estate revisions, warning once per
// mismatch.
func (s *Sync) checkLeader(ctx context.Context) {
	if s.opts.Leader == nil {
		return
	}
	rev := ""
	if s.opts.Revision != nil {
		rev = s.opts.Revision()
	}
	s.mu.Lock()
	st := s.status
	s.mu.Unlock()
	st.Instance, st.Leading, st.EstateRevision = s.opts.Instance, s.opts.Leader.Leading(), rev
	if st.Leading {
		if ls := nextLeaderState(st.Leader, st.Instance, rev, time.Now()); ls != nil {
			b, _ := json.Marshal(ls)
			if err := s.src.PutState(ctx, leaderKey, b); err != nil {
				s.opts.Log.Warn("publishing the leader's state failed", "err", err)
				return
			}
			st.Leader = ls
			if s.opts.Notifier != nil {
				s.opts.Notifier.Publish(KindState)
			}
		}
	} else {
		ls, err := s.readLeader(ctx)
		if err != nil {
			s.opts.Log.Warn("reading the leader's state failed", "err", err)
			return
		}
		st.Leader = ls
	}
	mismatch := st.Leader != nil && st.Leader.EstateRevision != rev
	st.EstateMismatch = mismatch
	s.mu.Lock()
	s.status = st
	// Instances reloading a new revision a moment apart differ briefly:
	// the warning waits for a second check that still finds them apart.
	if mismatch {
		s.mismatches++
	} else {
		s.mismatches = 0
	}
	warn := s.mismatches == 2
	s.mu.Unlock()
	if warn {
		s.opts.Log.Warn("this instance's estate differs from the leader's: deploy the same estate to every instance",
			"revision", rev, "leader", st.Leader.Instance, "leader_revision", st.Leader.EstateRevision)
	}
}

// nextLeaderState is the state this instance, leading, publishes when prev
// (the last it knows) is not already it (nil: nothing to publish). A new
// estate revision keeps Since: the same leader goes on, and the others
// read its decisions again only when another one takes over.
func nextLeaderState(prev *LeaderState, self, rev string, now time.Time) *LeaderState {
	switch {
	case prev == nil || prev.Instance != self:
		return &LeaderState{Instance: self, EstateRevision: rev, Since: now.UTC()}
	case prev.EstateRevision != rev:
		return &LeaderState{Instance: self, EstateRevision: rev, Since: prev.Since}
	}
	return nil
}

// readLeader reads the state the leader published (nil: none).
func (s *Sync) readLeader(ctx context.Context) (*LeaderState, error) {
	b, err := s.src.GetState(ctx, leaderKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var ls LeaderState
	if err := json.Unmarshal(b, &ls); err != nil {
		return nil, fmt.Errorf("the leader's state is unreadable: %w", err)
	}
	return &ls, nil
}

// Status is this instance's view of the instances (as of the last sweep).
func (s *Sync) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Instance = s.opts.Instance
	if s.opts.Leader != nil {
		st.Leading = s.opts.Leader.Leading()
	}
	return st
}
