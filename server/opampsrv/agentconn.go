package opampsrv

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/wsconn"
)

// conn is one agent connection: a WebSocket for its lifetime, or a single
// plain-HTTP poll.
type conn struct {
	srv  *Server
	cred store.Credential
	ws   *wsconn.Conn // nil for a plain-HTTP poll
	// remote is the peer's address, source its budget key
	// (backpressure.SourceKey).
	remote, source string

	mu        sync.Mutex
	uid       uuid.UUID // guarded by mu
	hasUID    bool      // guarded by mu
	sentFirst bool      // guarded by mu
	// opened is when the registry counted the WebSocket opened
	// (registry.ReportResult.Opened); replaced is set once a newer
	// connection of its agent replaced it; both guarded by mu.
	opened   time.Time
	replaced bool
}

func (c *conn) plainHTTP() bool { return c.ws == nil }

// handle records one message and builds the answer; nil means the
// connection was refused and closed.
func (c *conn) handle(msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
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

	res, err := s.reg.Report(uid, c.cred, msg, c.plainHTTP(), first && !c.plainHTTP())
	var conflict *registry.ConflictError
	var limited *registry.RegistrationLimitError
	switch {
	case errors.As(err, &conflict):
		return c.conflict(conflict)
	case errors.As(err, &limited):
		return c.retryLater(limited.RetryAfter, "this credential has registered as many new agents as it may for now; retry later", "registration_rate")
	case err != nil: // registry.ErrNotDurable
		s.log.Error("agent registration not persisted; the agent is asked to retry", "agent", uid, "err", err)
		return c.retryLater(5*time.Second, "the registration could not be stored; retry later", "not_durable")
	}
	if first {
		c.mu.Lock()
		c.uid, c.hasUID, c.opened = uid, true, res.Opened
		c.mu.Unlock()
		if !c.plainHTTP() {
			s.mu.Lock()
			old := s.byUID[uid]
			s.byUID[uid] = c
			s.mu.Unlock()
			if old != nil && old != c {
				s.replaced(uid, old, c)
			}
			// A newer connection to another instance may have replaced
			// this one between Report and now, when it could not be found.
			if instance, ok := s.reg.ReplacedBy(uid); ok {
				s.replacedElsewhere(c, instance)
				return nil
			}
		}
	}

	resp := &protobufs.ServerToAgent{InstanceUid: uid[:]}
	c.mu.Lock()
	if !c.sentFirst || c.plainHTTP() {
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

// conflict refuses a connection presenting an instance UID bound to
// another credential. Such refusals spend their source address's budget,
// as failed authentications do: within it the refusal is recorded in the
// agent's history (at most one event a minute per credential, see
// registry.RecordConflict) and logged through the refusal log (one line
// per source a minute, then a count); beyond it the connection is only
// counted and asked to come back later, so that a process reconnecting at
// once after each refusal costs neither the agent's history nor the log.
func (c *conn) conflict(e *registry.ConflictError) *protobufs.ServerToAgent {
	s := c.srv
	if !s.failures.Allow(c.source) {
		return c.retryLater(time.Minute, "too many refused connections from this address; retry later", "identity_conflict_throttled")
	}
	s.reg.RecordConflict(e.UID, e.Presented, c.remote)
	s.conflicts.Refused(c.source, "remote", c.remote, "agent", e.UID, "credential_kind", e.Presented.Kind, "credential", e.Presented.ID)
	return c.fail(protobufs.ServerErrorResponseType_ServerErrorResponseType_BadRequest,
		"this instance UID is registered with another credential", "identity_conflict")
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
	if c.plainHTTP() {
		return resp
	}
	_ = c.send(resp)
	_ = c.ws.CloseWith(wsconn.ClosePolicy, reason)
	return nil
}

// retryLater answers that the server cannot take the agent now: an
// Unavailable error with when to retry; a WebSocket is then closed with
// 1013 (try again later).
func (c *conn) retryLater(after time.Duration, msg, reason string) *protobufs.ServerToAgent {
	c.srv.countReject(reason)
	resp := &protobufs.ServerToAgent{ErrorResponse: &protobufs.ServerErrorResponse{
		Type:         protobufs.ServerErrorResponseType_ServerErrorResponseType_Unavailable,
		ErrorMessage: msg,
		Details:      &protobufs.ServerErrorResponse_RetryInfo{RetryInfo: &protobufs.RetryInfo{RetryAfterNanoseconds: uint64(after)}},
	}}
	if c.plainHTTP() {
		return resp
	}
	_ = c.send(resp)
	_ = c.ws.CloseWith(wsconn.CloseTryAgainLater, reason)
	return nil
}

// send queues one message as OpAMP frames it over WebSocket: a varint
// header (0) and the protobuf. A peer that does not take it within the send
// timeout, or lets its queue fill, is disconnected.
func (c *conn) send(msg *protobufs.ServerToAgent) error {
	if c.ws == nil {
		return errors.New("not a websocket")
	}
	b := make([]byte, 1, 1+proto.Size(msg))
	b, err := proto.MarshalOptions{}.MarshalAppend(b, msg)
	if err != nil {
		return fmt.Errorf("marshal message for %s: %w", c.uid, err)
	}
	if err := c.ws.WriteOwned(b); err != nil {
		c.srv.log.Debug("send failed; connection closed", "agent", c.uid, "err", err)
		return err
	}
	return nil
}

func (c *conn) close() {
	if c.ws != nil {
		_ = c.ws.Close()
	}
}

// decodeWSMessage strips OpAMP's WebSocket header (a zero varint; agents
// older than its introduction send none) and decodes the protobuf.
func decodeWSMessage(b []byte, msg *protobufs.AgentToServer) error {
	if len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return proto.Unmarshal(b, msg)
}

// wsHandler receives the WebSocket agents' messages from the poller.
type wsHandler struct{ s *Server }

func (h wsHandler) OnMessage(wc *wsconn.Conn, data []byte) {
	c := wc.Value.(*conn)
	var msg protobufs.AgentToServer
	if err := decodeWSMessage(data, &msg); err != nil {
		// Not an OpAMP message: a protocol violation, so drop the connection
		// rather than keep reading garbage.
		if h.s.metrics.Reject != nil {
			h.s.metrics.Reject("bad_frame")
		}
		h.s.log.Debug("unreadable agent message; closing", "agent", c.uid, "remote", wc.RemoteAddr(), "err", err)
		_ = wc.CloseWith(wsconn.CloseUnsupportedData, "not an OpAMP AgentToServer message")
		return
	}
	resp := c.handle(&msg)
	if resp == nil {
		return
	}
	_ = c.send(resp)
}

func (h wsHandler) OnClose(wc *wsconn.Conn, err error) {
	c := wc.Value.(*conn)
	s := h.s
	var pe *wsconn.ProtocolError
	if errors.As(err, &pe) {
		if s.metrics.Reject != nil {
			s.metrics.Reject("bad_frame")
		}
		s.log.Debug("websocket protocol violation; closed", "agent", c.uid, "remote", wc.RemoteAddr(), "err", err)
	}
	c.mu.Lock()
	uid, has := c.uid, c.hasUID
	c.mu.Unlock()
	s.mu.Lock()
	delete(s.conns, c)
	if has && s.byUID[uid] == c {
		delete(s.byUID, uid)
	}
	closing := s.closed
	s.mu.Unlock()
	// At shutdown the registry is flushed and closed next; marking each of
	// thousands of agents offline would re-evaluate pairing and offers for
	// each one for nothing.
	if has && !closing {
		s.reg.Disconnected(uid)
	}
}
