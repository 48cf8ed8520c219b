package opampsrv

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server/types"

	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
)

// conn is one agent connection: a WebSocket for its lifetime, or a single
// plain-HTTP poll.
type conn struct {
	srv  *Server
	cred store.Credential
	raw  *limitConn
	http bool

	mu        sync.Mutex
	oc        types.Connection
	uid       uuid.UUID
	hasUID    bool
	sentFirst bool
	closeOnce sync.Once
}

func (c *conn) onConnected(_ context.Context, oc types.Connection) {
	c.mu.Lock()
	c.oc = oc
	c.mu.Unlock()
	if c.http {
		return
	}
	c.srv.mu.Lock()
	closed := c.srv.closed
	c.srv.conns[c] = struct{}{}
	c.srv.mu.Unlock()
	if closed {
		c.close()
		return
	}
	c.armDeadline()
}

// armDeadline gives the agent ReadTimeout (≈3 heartbeats) for its next message.
func (c *conn) armDeadline() {
	if c.raw != nil && !c.http {
		_ = c.raw.SetReadDeadline(time.Now().Add(c.srv.opts.ReadTimeout))
	}
}

func (c *conn) onMessage(_ context.Context, oc types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	if c.raw != nil {
		c.raw.resetBudget()
	}
	c.armDeadline()
	s := c.srv
	if s.metrics.Message != nil {
		s.metrics.Message()
	}
	uid, err := uuid.FromBytes(msg.InstanceUid)
	if err != nil {
		return c.fail(protobufs.ServerErrorResponseType_ServerErrorResponseType_BadRequest,
			"instance_uid must be 16 bytes", "bad_uid")
	}
	c.mu.Lock()
	first := !c.hasUID
	if c.hasUID && c.uid != uid {
		c.mu.Unlock()
		return c.fail(protobufs.ServerErrorResponseType_ServerErrorResponseType_BadRequest,
			"instance_uid changed within one connection", "bad_uid")
	}
	c.mu.Unlock()

	res, err := s.reg.Report(uid, c.cred, msg, c.http, first && !c.http)
	var conflict *registry.ConflictError
	if errors.As(err, &conflict) {
		s.log.Warn("identity conflict", "agent", uid, "credential_kind", c.cred.Kind, "credential", c.cred.ID)
		return c.fail(protobufs.ServerErrorResponseType_ServerErrorResponseType_BadRequest,
			"this instance UID is registered with another credential", "identity_conflict")
	}
	if first {
		c.mu.Lock()
		c.uid, c.hasUID = uid, true
		c.mu.Unlock()
		if !c.http {
			s.mu.Lock()
			old := s.byUID[uid]
			s.byUID[uid] = c
			s.mu.Unlock()
			if old != nil && old != c {
				// The agent reconnected before we noticed its old socket died.
				old.close()
			}
		}
	}

	resp := &protobufs.ServerToAgent{InstanceUid: uid[:]}
	c.mu.Lock()
	if !c.sentFirst || c.http {
		resp.Capabilities = uint64(Capabilities)
		c.sentFirst = true
		if offer := c.heartbeatOffer(msg.Capabilities); offer != nil {
			resp.ConnectionSettings = offer
		}
	}
	c.mu.Unlock()
	if res.FullState {
		resp.Flags |= uint64(protobufs.ServerToAgentFlags_ServerToAgentFlags_ReportFullState)
	}
	for _, h := range s.hooks {
		h.OnAgentMessage(uid, msg, resp)
	}
	return resp
}

// heartbeatOffer offers the heartbeat interval to agents that report
// heartbeats. Agents that accept OpAMP connection settings would treat an
// offer as new connection settings and reconnect, so they are left alone.
func (c *conn) heartbeatOffer(caps uint64) *protobufs.ConnectionSettingsOffers {
	if caps&uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat) == 0 ||
		caps&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsOpAMPConnectionSettings) != 0 {
		return nil
	}
	secs := uint64(c.srv.opts.Heartbeat / time.Second)
	h := sha256.Sum256([]byte{byte(secs >> 8), byte(secs)})
	return &protobufs.ConnectionSettingsOffers{
		Hash:  h[:],
		Opamp: &protobufs.OpAMPConnectionSettings{HeartbeatIntervalSeconds: secs},
	}
}

// fail answers with an error response; a WebSocket is then closed.
func (c *conn) fail(typ protobufs.ServerErrorResponseType, msg, reason string) *protobufs.ServerToAgent {
	s := c.srv
	if s.metrics.Reject != nil {
		s.metrics.Reject(reason)
	}
	resp := &protobufs.ServerToAgent{ErrorResponse: &protobufs.ServerErrorResponse{Type: typ, ErrorMessage: msg}}
	if c.http {
		return resp
	}
	_ = c.send(resp)
	c.close()
	return nil
}

// send writes one message with a watchdog: opamp-go has no write deadline,
// so a stuck peer would block the sender forever. On timeout the socket is closed.
func (c *conn) send(msg *protobufs.ServerToAgent) error {
	c.mu.Lock()
	oc := c.oc
	c.mu.Unlock()
	if oc == nil {
		return errors.New("not connected")
	}
	done := make(chan error, 1)
	go func() { done <- oc.Send(context.Background(), msg) }()
	t := time.NewTimer(c.srv.opts.SendTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		c.srv.log.Warn("send timed out; closing the connection", "agent", c.uid)
		c.close()
		return errors.New("send timed out")
	}
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		if c.raw != nil {
			_ = c.raw.Close()
		}
	})
}

func (c *conn) onReadError(_ types.Connection, mt int, _ []byte, err error) {
	if mt < 0 {
		// Nothing was read: the agent went away without a close frame (a
		// restart, a network drop). That is no protocol violation.
		c.srv.log.Debug("agent connection lost", "agent", c.uid, "err", err)
		c.close()
		return
	}
	// A frame that is not a valid OpAMP message is a protocol violation:
	// drop the connection rather than keep reading garbage.
	if c.srv.metrics.Reject != nil {
		c.srv.metrics.Reject("bad_frame")
	}
	c.srv.log.Debug("unreadable agent message; closing", "agent", c.uid, "err", err)
	c.close()
}

func (c *conn) onClose(types.Connection) {
	if c.http {
		return
	}
	s := c.srv
	c.mu.Lock()
	uid, has := c.uid, c.hasUID
	c.mu.Unlock()
	s.mu.Lock()
	delete(s.conns, c)
	if has && s.byUID[uid] == c {
		delete(s.byUID, uid)
	}
	s.mu.Unlock()
	c.close()
	if has {
		s.reg.Disconnected(uid)
	}
}
