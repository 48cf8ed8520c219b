package server

import (
	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/accounts"
)

// newAccounts keeps the users and API keys in the store; a scope names the
// estate's fleets.
func (s *Server) newAccounts() *accounts.Service {
	return accounts.New(s.store, accounts.Options{FleetExists: s.fleetExists})
}

// fleetExists reports whether the estate in force has a fleet named name.
func (s *Server) fleetExists(name string) bool {
	s.estateMu.Lock()
	est := s.estate
	s.estateMu.Unlock()
	if est == nil {
		return false
	}
	for _, f := range est.Fleets {
		if f.Name == name {
			return true
		}
	}
	return false
}

// fleetOfAgent names the fleet an agent belongs to, by the estate in
// force and the agent's attribute view ("" for none).
func (s *Server) fleetOfAgent(uid uuid.UUID) string {
	a, ok := s.registry.Peek(uid)
	if !ok {
		return ""
	}
	s.estateMu.Lock()
	est := s.estate
	s.estateMu.Unlock()
	if est == nil {
		return ""
	}
	def, err := est.FleetFor(a.Attributes)
	if err != nil || def == nil {
		return ""
	}
	return def.Name
}
