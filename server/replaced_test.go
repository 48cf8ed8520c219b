package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/opampsrv"
)

// TestConnectionReplaced: a second connection with the same token and
// instance UID replaces the first (agents reconnect), but not silently: the
// old socket gets a close frame with CloseReplaced, the agent's history
// names both addresses and the metrics count it.
func TestConnectionReplaced(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("site", nil)
	uid := newUID(t)
	hello := &protobufs.AgentToServer{InstanceUid: uid[:], Capabilities: uint64(baseCaps),
		AgentDescription: &protobufs.AgentDescription{IdentifyingAttributes: kvs("service.name", "otelcol")}}

	first := dialRaw(t, ts, tok.Token)
	first.send(hello)
	first.recv()
	second := dialRaw(t, ts, tok.Token)
	second.send(hello)
	second.recv()

	first.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err := first.ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != opampsrv.CloseReplaced {
		t.Fatalf("replaced connection ended with %v, want a close frame with code %d", err, opampsrv.CloseReplaced)
	}
	a := ts.waitAgent(uid, "connection_replaced event", func(a admin.Agent) bool {
		_, ok := hasEvent(a, "connection_replaced")
		return ok
	})
	ev, _ := hasEvent(a, "connection_replaced")
	oldAddr, newAddr := first.ws.LocalAddr().String(), second.ws.LocalAddr().String()
	if !strings.Contains(ev.Message, oldAddr) || !strings.Contains(ev.Message, newAddr) {
		t.Errorf("event %q does not name both addresses %s and %s", ev.Message, oldAddr, newAddr)
	}
	if _, text := getNoToken(t, ts, "/metrics"); !strings.Contains(text, "myriarch_opamp_connections_replaced_total 1") {
		t.Errorf("metrics do not count the replacement:\n%s", grepLines(text, "myriarch_opamp"))
	}
	// The new connection is the agent's.
	second.send(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: 1, Capabilities: uint64(baseCaps)})
	if r := second.recv(); r.ErrorResponse != nil {
		t.Fatalf("replacing connection refused: %v", r.ErrorResponse)
	}
}
