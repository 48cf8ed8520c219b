//go:build linux

package attack

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"
)

const opampPath = "/v1/opamp"

// hello is an agent's first message.
func hello(uid uuid.UUID, seq uint64) *protobufs.AgentToServer {
	return &protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: seq,
		Capabilities: uint64(protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus),
		AgentDescription: &protobufs.AgentDescription{IdentifyingAttributes: []*protobufs.KeyValue{
			testkit.KV("service.name", "otelcol-contrib"), testkit.KV("service.instance.id", uid.String())}}}
}

// wsAgent is an agent over WebSocket.
type wsAgent struct {
	t  *testing.T
	ws *websocket.Conn
}

func dialWS(t *testing.T, d *daemon, token string) (*wsAgent, error) {
	t.Helper()
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	ws, resp, err := websocket.DefaultDialer.Dial("ws://"+d.opamp+opampPath, hdr)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%w (HTTP %d)", err, resp.StatusCode)
		}
		return nil, err
	}
	t.Cleanup(func() { ws.Close() })
	return &wsAgent{t: t, ws: ws}, nil
}

func mustWS(t *testing.T, d *daemon, token string) *wsAgent {
	t.Helper()
	a, err := dialWS(t, d, token)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *wsAgent) send(m *protobufs.AgentToServer) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return a.ws.WriteMessage(websocket.BinaryMessage, append([]byte{0}, b...))
}

// recv reads the next answer; err when the connection ended.
func (a *wsAgent) recv(within time.Duration) (*protobufs.ServerToAgent, error) {
	a.ws.SetReadDeadline(time.Now().Add(within))
	_, data, err := a.ws.ReadMessage()
	if err != nil {
		return nil, err
	}
	var m protobufs.ServerToAgent
	if len(data) == 0 {
		return nil, fmt.Errorf("empty message")
	}
	return &m, proto.Unmarshal(data[1:], &m)
}

// register sends hello and waits for the answer.
func (a *wsAgent) register(uid uuid.UUID) *protobufs.ServerToAgent {
	a.t.Helper()
	if err := a.send(hello(uid, 0)); err != nil {
		a.t.Fatal(err)
	}
	m, err := a.recv(10 * time.Second)
	if err != nil {
		a.t.Fatalf("registration of %s: %v", uid, err)
	}
	return m
}

// closeCode waits for the end of the connection and returns the close
// code received (0: none).
func (a *wsAgent) closeCode(within time.Duration) int {
	a.ws.SetReadDeadline(time.Now().Add(within))
	for {
		_, _, err := a.ws.ReadMessage()
		if err == nil {
			continue
		}
		if ce, ok := err.(*websocket.CloseError); ok {
			return ce.Code
		}
		return 0
	}
}

// pollHTTP sends one plain-HTTP OpAMP message.
func pollHTTP(t *testing.T, d *daemon, token string, m *protobufs.AgentToServer) (int, *protobufs.ServerToAgent) {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+d.opamp+opampPath, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/x-protobuf")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out protobufs.ServerToAgent
	if resp.StatusCode == 200 {
		proto.Unmarshal(data, &out)
	}
	return resp.StatusCode, &out
}

// rawWS is a WebSocket spoken byte by byte, for frames no library sends.
type rawWS struct {
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, d *daemon, token string) *rawWS {
	t.Helper()
	return dialRawWith(t, d, token, &net.Dialer{})
}

// notReading is a dialer of sockets with a 4 KiB receive buffer: a peer
// that does not read fills the server's send buffer sooner.
var notReading = &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	return errors.Join(err, serr)
}}

func dialRawWith(t *testing.T, d *daemon, token string, dialer *net.Dialer) *rawWS {
	t.Helper()
	nc, err := dialer.Dial("tcp", d.opamp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	req := "GET " + opampPath + " HTTP/1.1\r\nHost: " + d.opamp + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer " + token + "\r\n\r\n"
	nc.Write([]byte(req))
	br := bufio.NewReader(nc)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("raw upgrade: %v %v", resp, err)
	}
	nc.SetReadDeadline(time.Time{})
	return &rawWS{nc: nc, br: br}
}

// frame builds a masked client frame; length overrides the payload's
// length in the header when >= 0.
func frame(b0 byte, payload []byte, length int64) []byte {
	n := int64(len(payload))
	if length >= 0 {
		n = length
	}
	out := []byte{b0}
	switch {
	case n < 126:
		out = append(out, 0x80|byte(n))
	case n <= 0xffff:
		out = binary.BigEndian.AppendUint16(append(out, 0x80|126), uint16(n))
	default:
		out = binary.BigEndian.AppendUint64(append(out, 0x80|127), uint64(n))
	}
	key := [4]byte{1, 2, 3, 4}
	out = append(out, key[:]...)
	for i, c := range payload {
		out = append(out, c^key[i&3])
	}
	return out
}

// closeCode reads frames until the server's close frame (0: none came).
func (r *rawWS) closeCode(within time.Duration) int {
	r.nc.SetReadDeadline(time.Now().Add(within))
	for {
		h := make([]byte, 2)
		if _, err := io.ReadFull(r.br, h); err != nil {
			return 0
		}
		n := int64(h[1] & 0x7f)
		switch n {
		case 126:
			b := make([]byte, 2)
			io.ReadFull(r.br, b)
			n = int64(binary.BigEndian.Uint16(b))
		case 127:
			b := make([]byte, 8)
			io.ReadFull(r.br, b)
			n = int64(binary.BigEndian.Uint64(b))
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(r.br, p); err != nil {
			return 0
		}
		if h[0]&0x0f == 0x8 && len(p) >= 2 {
			return int(binary.BigEndian.Uint16(p))
		}
	}
}

// closed reports whether the server ended the connection within d.
func closed(nc net.Conn, within time.Duration) bool {
	nc.SetReadDeadline(time.Now().Add(within))
	buf := make([]byte, 4096)
	for {
		if _, err := nc.Read(buf); err != nil {
			ne, ok := err.(net.Error)
			return !ok || !ne.Timeout()
		}
	}
}

// stillOpen counts the connections the server has not ended within d.
func stillOpen(conns []net.Conn, within time.Duration) int {
	var open atomic.Int64
	var wg sync.WaitGroup
	for _, nc := range conns {
		wg.Go(func() {
			if !closed(nc, within) {
				open.Add(1)
			}
		})
	}
	wg.Wait()
	return int(open.Load())
}

func has(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
