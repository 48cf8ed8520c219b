package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/server/admin"
)

// rawAgent speaks OpAMP over a WebSocket by hand, to control exactly what is sent.
type rawAgent struct {
	t  *testing.T
	ws *websocket.Conn
}

func dialRaw(t *testing.T, ts *testServer, token string) *rawAgent {
	t.Helper()
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+token)
	ws, resp, err := websocket.DefaultDialer.Dial(ts.OpAMPURL(), hdr)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { ws.Close() })
	return &rawAgent{t: t, ws: ws}
}

func (r *rawAgent) send(m *protobufs.AgentToServer) {
	r.t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		r.t.Fatal(err)
	}
	// OpAMP WebSocket framing: a varint header (0) before the protobuf.
	if err := r.ws.WriteMessage(websocket.BinaryMessage, append([]byte{0}, b...)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawAgent) recv() *protobufs.ServerToAgent {
	r.t.Helper()
	r.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := r.ws.ReadMessage()
	if err != nil {
		r.t.Fatalf("recv: %v", err)
	}
	var m protobufs.ServerToAgent
	if err := proto.Unmarshal(data[1:], &m); err != nil {
		r.t.Fatal(err)
	}
	return &m
}

const fullState = uint64(protobufs.ServerToAgentFlags_ServerToAgentFlags_ReportFullState)

func TestFirstResponseAndStatusCompression(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("raw", nil)
	uid := newUID(t)
	desc := &protobufs.AgentDescription{IdentifyingAttributes: kvs("service.name", "otelcol")}
	caps := uint64(baseCaps)

	a := dialRaw(t, ts, tok.Token)
	a.send(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: 0, AgentDescription: desc, Capabilities: caps})
	resp := a.recv()
	if resp.Capabilities&uint64(protobufs.ServerCapabilities_ServerCapabilities_OffersPackages) == 0 ||
		resp.Capabilities&uint64(protobufs.ServerCapabilities_ServerCapabilities_AcceptsStatus) == 0 {
		t.Fatalf("first response capabilities = %b", resp.Capabilities)
	}
	if hb := resp.GetConnectionSettings().GetOpamp().GetHeartbeatIntervalSeconds(); hb != 30 {
		t.Fatalf("heartbeat offered = %d, want 30", hb)
	}
	if resp.Flags&fullState != 0 {
		t.Fatal("full state requested although the description was sent")
	}
	// Compressed message in sequence: no request.
	a.send(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: 1, Capabilities: caps})
	if r := a.recv(); r.Flags&fullState != 0 || r.Capabilities != 0 {
		t.Fatalf("in-sequence message: flags %b caps %b", r.Flags, r.Capabilities)
	}
	// A gap: the server must ask for full state.
	a.send(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: 5, Capabilities: caps})
	if r := a.recv(); r.Flags&fullState == 0 {
		t.Fatal("sequence gap did not request full state")
	}

	// After a server restart the agent reconnects with a compressed first
	// message: the server cannot know what it missed and asks for full state.
	ts = ts.restart()
	b := dialRaw(t, ts, tok.Token)
	b.send(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: 6, Capabilities: caps})
	if r := b.recv(); r.Flags&fullState == 0 {
		t.Fatal("reconnect after restart did not request full state")
	}

	// A brand-new agent that sends no description is asked for it.
	c := dialRaw(t, ts, tok.Token)
	u2 := newUID(t)
	c.send(&protobufs.AgentToServer{InstanceUid: u2[:], SequenceNum: 0, Capabilities: caps})
	if r := c.recv(); r.Flags&fullState == 0 {
		t.Fatal("unknown description did not request full state")
	}
}

func TestBadFramesDoNotCrash(t *testing.T) {
	ts := startServer(t)
	tok := ts.createToken("bad", nil)
	frames := [][]byte{
		{},
		{0},
		{0, 0xff, 0xff, 0xff},
		append([]byte{0}, []byte(strings.Repeat("\x0a\xff", 100))...),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for i, f := range frames {
		a := dialRaw(t, ts, tok.Token)
		if err := a.ws.WriteMessage(websocket.BinaryMessage, f); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		// The server may answer with an error_response before closing, never with anything else.
		closed := false
		for range 3 {
			a.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, data, err := a.ws.ReadMessage()
			if err != nil {
				closed = true
				break
			}
			var m protobufs.ServerToAgent
			if len(data) == 0 || proto.Unmarshal(data[1:], &m) != nil || m.ErrorResponse == nil {
				t.Fatalf("frame %d: answered with something other than an error", i)
			}
		}
		if !closed {
			t.Fatalf("frame %d: connection stayed open after garbage", i)
		}
	}
	// A text frame and a short UID.
	a := dialRaw(t, ts, tok.Token)
	a.ws.WriteMessage(websocket.TextMessage, []byte("hello"))
	b := dialRaw(t, ts, tok.Token)
	b.send(&protobufs.AgentToServer{InstanceUid: []byte{1, 2, 3}})
	if r := b.recv(); r.ErrorResponse == nil {
		t.Fatal("short instance_uid accepted")
	}
	// Oversized message: the connection is dropped, the server lives on.
	c := dialRaw(t, ts, tok.Token)
	uid := newUID(t)
	big := &protobufs.AgentToServer{InstanceUid: uid[:], AgentDescription: &protobufs.AgentDescription{
		IdentifyingAttributes: kvs("service.name", strings.Repeat("x", 9<<20))}}
	data, _ := proto.Marshal(big)
	_ = c.ws.WriteMessage(websocket.BinaryMessage, append([]byte{0}, data...))
	c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := c.ws.ReadMessage(); err == nil {
		t.Fatal("oversized message answered")
	}
	if _, ok := ts.agent(uid); ok {
		t.Fatal("oversized message registered an agent")
	}
	// Plain-HTTP garbage.
	req, _ := http.NewRequest("POST", "http://"+ts.OpAMPAddr().String()+"/v1/opamp", strings.NewReader("\xff\xff\xff"))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("http garbage: %v %v", resp, err)
	}
	resp.Body.Close()
	// Still serving real agents.
	u := newUID(t)
	ts.connect(agentSpec{uid: u, token: tok.Token, identifying: kvs("service.name", "otelcol")})
	ts.waitAgent(u, "online after garbage", func(a admin.Agent) bool { return a.Online })
}
