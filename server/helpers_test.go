package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/apispec/apispectest"
)

type testServer struct {
	*server.Server
	t    *testing.T
	opts server.Options
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("MYRIARCH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func startServer(t *testing.T, mutate ...func(*server.Options)) *testServer {
	t.Helper()
	opts := server.Options{
		DataDir:     t.TempDir(),
		Listen:      "127.0.0.1:0",
		AdminListen: "127.0.0.1:0",
		Log:         testLogger(t),
	}
	for _, m := range mutate {
		m(&opts)
	}
	return startWith(t, opts)
}

func startWith(t *testing.T, opts server.Options) *testServer {
	t.Helper()
	if opts.CheckResponses == nil {
		opts.CheckResponses = apispectest.CheckResponses(t)
	}
	s, err := server.New(context.Background(), opts)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	ts := &testServer{Server: s, t: t, opts: opts}
	t.Cleanup(func() { ts.stop() })
	return ts
}

var stopped = map[*server.Server]bool{}

// forT returns a view of ts that reports failures to t (for subtests).
func (ts *testServer) forT(t *testing.T) *testServer {
	c := *ts
	c.t = t
	return &c
}

func (ts *testServer) stop() {
	if stopped[ts.Server] {
		return
	}
	stopped[ts.Server] = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.Close(ctx); err != nil {
		ts.t.Logf("close: %v", err)
	}
}

// restart stops the server and starts a new one on the same data dir and ports.
func (ts *testServer) restart() *testServer {
	opts := ts.opts
	opts.Listen = ts.OpAMPAddr().String()
	opts.AdminListen = ts.AdminAddr().String()
	ts.stop()
	return startWith(ts.t, opts)
}

func (ts *testServer) api(method, path string, body any) (int, []byte) {
	ts.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+ts.AdminAddr().String()+path, rd)
	req.Header.Set("Authorization", "Bearer "+ts.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

type createdToken struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	Token  string            `json:"token"`
	Labels map[string]string `json:"labels"`
}

func (ts *testServer) createToken(name string, labels map[string]string) createdToken {
	ts.t.Helper()
	code, body := ts.api("POST", "/api/v1/tokens", map[string]any{"name": name, "labels": labels})
	if code != http.StatusCreated {
		ts.t.Fatalf("create token: %d %s", code, body)
	}
	var tok createdToken
	if err := json.Unmarshal(body, &tok); err != nil {
		ts.t.Fatal(err)
	}
	return tok
}

func (ts *testServer) agent(uid uuid.UUID) (admin.Agent, bool) {
	ts.t.Helper()
	code, body := ts.api("GET", "/api/v1/agents/"+uid.String(), nil)
	if code == http.StatusNotFound {
		return admin.Agent{}, false
	}
	if code != http.StatusOK {
		ts.t.Fatalf("get agent: %d %s", code, body)
	}
	var a admin.Agent
	if err := json.Unmarshal(body, &a); err != nil {
		ts.t.Fatal(err)
	}
	return a, true
}

// waitAgent polls until cond holds for the agent or the deadline passes.
func (ts *testServer) waitAgent(uid uuid.UUID, what string, cond func(a admin.Agent) bool) admin.Agent {
	ts.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last admin.Agent
	for time.Now().Before(deadline) {
		if a, ok := ts.agent(uid); ok {
			last = a
			if cond(a) {
				return a
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	js, _ := json.MarshalIndent(last, "", "  ")
	ts.t.Fatalf("agent %s: timed out waiting for %s; last seen:\n%s", uid, what, js)
	return last
}

func hasEvent(a admin.Agent, typ string) (admin.Event, bool) {
	for _, e := range a.Events {
		if e.Type == typ {
			return e, true
		}
	}
	return admin.Event{}, false
}

func kvs(pairs ...string) []*protobufs.KeyValue {
	var out []*protobufs.KeyValue
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, testkit.KV(pairs[i], pairs[i+1]))
	}
	return out
}

type agentSpec struct {
	uid          uuid.UUID
	token        string
	identifying  []*protobufs.KeyValue
	nonIdent     []*protobufs.KeyValue
	capabilities protobufs.AgentCapabilities
	http         bool
	onError      func(*protobufs.ServerErrorResponse)
	onMessage    func(*types.MessageData)
	tlsConfig    any
}

const baseCaps = protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat

type nopLogger struct{}

func (nopLogger) Debugf(context.Context, string, ...any) {}
func (nopLogger) Errorf(context.Context, string, ...any) {}

// connect starts a real opamp-go client against ts.
func (ts *testServer) connect(spec agentSpec) client.OpAMPClient {
	ts.t.Helper()
	var c client.OpAMPClient
	url := ts.OpAMPURL()
	if spec.http {
		c = client.NewHTTP(nopLogger{})
		url = "http://" + ts.OpAMPAddr().String() + "/v1/opamp"
	} else {
		c = client.NewWebSocket(nopLogger{})
	}
	if err := c.SetAgentDescription(&protobufs.AgentDescription{
		IdentifyingAttributes: spec.identifying, NonIdentifyingAttributes: spec.nonIdent,
	}); err != nil {
		ts.t.Fatal(err)
	}
	if err := c.SetHealth(&protobufs.ComponentHealth{Healthy: true, Status: "running"}); err != nil {
		ts.t.Fatal(err)
	}
	caps := spec.capabilities
	if caps == 0 {
		caps = baseCaps
	}
	hdr := http.Header{}
	if spec.token != "" {
		hdr.Set("Authorization", "Bearer "+spec.token)
	}
	settings := types.StartSettings{
		OpAMPServerURL: url,
		Header:         hdr,
		InstanceUid:    types.InstanceUid(spec.uid),
		Capabilities:   caps,
		Callbacks: types.Callbacks{
			OnError: func(_ context.Context, e *protobufs.ServerErrorResponse) {
				if spec.onError != nil {
					spec.onError(e)
				}
			},
			OnMessage: func(_ context.Context, m *types.MessageData) {
				if spec.onMessage != nil {
					spec.onMessage(m)
				}
			},
		},
	}
	if err := c.Start(context.Background(), settings); err != nil {
		ts.t.Fatalf("client start: %v", err)
	}
	once := &stopOnce{OpAMPClient: c}
	ts.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = once.Stop(ctx)
	})
	return once
}

// stopOnce stops its client once: opamp-go's Stop, called again, waits for
// its context to end (the cleanup of a client a test stopped itself).
type stopOnce struct {
	client.OpAMPClient
	once sync.Once
	err  error
}

func (s *stopOnce) Stop(ctx context.Context) error {
	s.once.Do(func() { s.err = s.OpAMPClient.Stop(ctx) })
	return s.err
}

// newUIDOverride makes the next newUID return a fixed UID (reconnect tests).
var newUIDOverride *uuid.UUID

func newUID(t *testing.T) uuid.UUID {
	if newUIDOverride != nil {
		return *newUIDOverride
	}
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func removeFile(dir, rel string) { _ = os.Remove(dir + "/" + rel) }
