package server_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/opampsrv"
	"github.com/myriarch/myriarch/server/registry"
)

// watchedAgent is a raw agent whose answers and close are read by a
// goroutine of its own, so that two of them can be waited on at once; it
// pings meanwhile, so that the server does not end it for silence.
type watchedAgent struct {
	*rawAgent
	answers chan *protobufs.ServerToAgent
	closed  chan int // the close code received (0: the connection ended without one)
}

func watch(r *rawAgent) *watchedAgent {
	w := &watchedAgent{rawAgent: r, answers: make(chan *protobufs.ServerToAgent, 16), closed: make(chan int, 1)}
	ended := make(chan struct{})
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ended:
				return
			case <-tick.C:
				_ = r.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second))
			}
		}
	}()
	go func() {
		defer close(ended)
		for {
			_, data, err := r.ws.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					w.closed <- ce.Code
				} else {
					w.closed <- 0
				}
				return
			}
			var m protobufs.ServerToAgent
			if len(data) > 0 && proto.Unmarshal(data[1:], &m) == nil {
				w.answers <- &m
			}
		}
	}()
	return w
}

// answer waits for the next answer; it fails t when the connection ends first.
func (w *watchedAgent) answer(t *testing.T) *protobufs.ServerToAgent {
	t.Helper()
	select {
	case m := <-w.answers:
		return m
	case code := <-w.closed:
		t.Fatalf("connection closed (code %d) instead of answering", code)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10 s")
	}
	return nil
}

// replacedTotal is the instance's myriarch_opamp_connections_replaced_total.
func (ts *testServer) replacedTotal() int {
	ts.t.Helper()
	_, text := getNoToken(ts.t, ts, "/metrics")
	line := grepLines(text, "myriarch_opamp_connections_replaced_total ")
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "myriarch_opamp_connections_replaced_total ")))
	if err != nil {
		ts.t.Fatalf("no replaced connections counted: %q", line)
	}
	return n
}

// An agent's identity (instance UID and credential) connected to two
// instances sharing a store is one connection, as on one instance: the
// newer replaces the older, which the instance holding it closes with
// CloseReplaced, records as connection_replaced and counts; both
// instances then show the newer connection's description. Whether the
// two connect one after the other or at once, exactly one connection
// stays open, and it keeps being answered.
func TestConnectionReplacedOnAnotherInstance(t *testing.T) {
	ins := startInstances(t, 2)
	a, b := ins[0], ins[1]
	tok := a.createToken("site", nil)
	testkit.WaitFor(t, "B to know A's token", func() bool { return b.Tokens().TokenName(tok.ID) != "" })
	hello := func(uid uuid.UUID, host string) *protobufs.AgentToServer {
		return &protobufs.AgentToServer{InstanceUid: uid[:], Capabilities: uint64(baseCaps),
			AgentDescription: &protobufs.AgentDescription{IdentifyingAttributes: kvs("service.name", "otelcol"),
				NonIdentifyingAttributes: kvs("host.name", host)}}
	}
	host := func(h string) func(admin.Agent) bool {
		return func(x admin.Agent) bool { return x.Online && x.Attributes["host.name"] == h }
	}

	t.Run("one after the other", func(t *testing.T) {
		a, b := a.forT(t), b.forT(t)
		uid := newUID(t)
		first := watch(dialRaw(t, a, tok.Token))
		first.send(hello(uid, "host-a"))
		first.answer(t)
		b.waitAgent(uid, "B to show the agent connected to A", host("host-a"))

		second := watch(dialRaw(t, b, tok.Token))
		second.send(hello(uid, "host-b"))
		second.answer(t)
		select {
		case code := <-first.closed:
			if code != opampsrv.CloseReplaced {
				t.Fatalf("the older connection, on A, closed with %d, want %d", code, opampsrv.CloseReplaced)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the older connection, on A, is still open 15 s after a newer one of the agent opened on B")
		}
		for _, ts := range []*testServer{a, b} {
			x := ts.waitAgent(uid, "the newer connection's description and the replacement in the history", func(x admin.Agent) bool {
				_, ok := hasEvent(x, registry.EventConnectionReplaced)
				return host("host-b")(x) && ok
			})
			if ev, _ := hasEvent(x, registry.EventConnectionReplaced); !strings.Contains(ev.Message, first.ws.LocalAddr().String()) {
				t.Errorf("event %q does not name the replaced connection's address %s", ev.Message, first.ws.LocalAddr())
			}
		}
		if n := a.replacedTotal(); n != 1 {
			t.Errorf("A, which closed the older connection, counts %d replaced connections, want 1", n)
		}
		if n := b.replacedTotal(); n != 0 {
			t.Errorf("B, which closed nothing, counts %d replaced connections", n)
		}
		second.send(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: 1, Capabilities: uint64(baseCaps)})
		if r := second.answer(t); r.ErrorResponse != nil {
			t.Fatalf("the newer connection refused: %v", r.ErrorResponse)
		}
	})

	t.Run("at once", func(t *testing.T) {
		a, b := a.forT(t), b.forT(t)
		uid := newUID(t)
		replacedBefore := a.replacedTotal() + b.replacedTotal()
		onA, onB := watch(dialRaw(t, a, tok.Token)), watch(dialRaw(t, b, tok.Token))
		done := make(chan struct{})
		go func() { onA.send(hello(uid, "host-a")); close(done) }()
		onB.send(hello(uid, "host-b"))
		<-done
		var survivor *watchedAgent
		var other *testServer
		survivorHost := ""
		select {
		case code := <-onA.closed:
			survivor, other, survivorHost = onB, a, "host-b"
			if code != opampsrv.CloseReplaced {
				t.Fatalf("the connection to A closed with %d, want %d", code, opampsrv.CloseReplaced)
			}
		case code := <-onB.closed:
			survivor, other, survivorHost = onA, b, "host-a"
			if code != opampsrv.CloseReplaced {
				t.Fatalf("the connection to B closed with %d, want %d", code, opampsrv.CloseReplaced)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("both connections of the agent still open 15 s after they opened")
		}
		for _, ts := range []*testServer{a, b} {
			ts.waitAgent(uid, "the surviving connection's description", host(survivorHost))
		}
		// The survivor is still answered once both instances agree on it.
		survivor.send(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: 1, Capabilities: uint64(baseCaps)})
		for {
			r := survivor.answer(t)
			if r.ErrorResponse != nil {
				t.Fatalf("the surviving connection refused: %v", r.ErrorResponse)
			}
			if r.Capabilities == 0 { // not the first answer
				break
			}
		}
		if n := a.replacedTotal() + b.replacedTotal() - replacedBefore; n != 1 {
			t.Errorf("%d replaced connections counted, want 1", n)
		}
		if x, _ := other.agent(uid); !x.Online {
			t.Errorf("the instance that closed its connection shows the agent offline")
		}
		if code, _ := other.api(http.MethodGet, "/api/v1/agents/"+uid.String(), nil); code != http.StatusOK {
			t.Errorf("the instance that closed its connection lost the agent: %d", code)
		}
	})
}
