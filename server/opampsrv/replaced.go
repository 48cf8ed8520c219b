package opampsrv

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/registry"
)

// An agent's identity (instance UID and credential) has one WebSocket: a
// newer one replaces the one open, here or on another instance sharing
// the store (see registry.ReplacedElsewhere). The replaced one is closed
// with CloseReplaced, recorded as a connection_replaced event of the agent,
// logged and counted, by the instance it was open to.

// replaced ends old, an open WebSocket of uid that c replaces: an agent
// that reconnected before its old socket was noticed dead, or another
// process using its identity with the same credential (a copied site
// token). Either way it is recorded, logged and counted, so the second
// case can be noticed.
func (s *Server) replaced(uid uuid.UUID, old, c *conn) {
	if !old.markReplaced() {
		return
	}
	oldAddr, newAddr := old.ws.RemoteAddr().String(), c.ws.RemoteAddr().String()
	s.reg.AddEvent(uid, registry.EventConnectionReplaced,
		fmt.Sprintf("a connection from %s replaced the open one from %s (same credential)", newAddr, oldAddr))
	s.log.Info("agent connection replaced by a newer one", "agent", uid, "old", oldAddr, "new", newAddr)
	s.endReplaced(old)
}

// onReplacedElsewhere (see registry.OnReplacedElsewhere) ends the
// WebSocket of an agent here that a newer one to another instance
// replaced, unless the one open here opened since. One that the registry
// counted but that is not found yet is ended by handle.
func (s *Server) onReplacedElsewhere(e registry.ReplacedElsewhere) {
	s.mu.Lock()
	c := s.byUID[e.UID]
	s.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	newer := c.opened.After(e.Opened)
	c.mu.Unlock()
	if !newer {
		s.replacedElsewhere(c, e.Instance)
	}
}

// replacedElsewhere ends c, replaced by a newer connection of its agent to
// instance ("" when that one has closed since).
func (s *Server) replacedElsewhere(c *conn, instance string) {
	if !c.markReplaced() {
		return
	}
	c.mu.Lock()
	uid := c.uid
	c.mu.Unlock()
	if instance == "" {
		instance = "(closed since)"
	}
	addr := c.ws.RemoteAddr().String()
	s.reg.AddEvent(uid, registry.EventConnectionReplaced,
		fmt.Sprintf("a connection to instance %s replaced the open one from %s (same credential)", instance, addr))
	s.log.Info("agent connection replaced by a newer one to another instance", "agent", uid, "old", addr, "instance", instance)
	s.endReplaced(c)
}

// endReplaced counts and closes a replaced connection.
func (s *Server) endReplaced(c *conn) {
	if s.metrics.Replaced != nil {
		s.metrics.Replaced()
	}
	_ = c.ws.CloseWith(CloseReplaced, "replaced by a newer connection of this agent")
}

// markReplaced reports whether c was not marked replaced yet, and marks it.
func (c *conn) markReplaced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.replaced {
		return false
	}
	c.replaced = true
	return true
}
