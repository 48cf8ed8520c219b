package opampsrv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/server/registry"
	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

// siteTokens knows two tokens: "owner" and "intruder".
type siteTokens struct{}

func (siteTokens) Authenticate(r *http.Request) (store.Credential, error) {
	switch tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); tok {
	case "owner", "intruder":
		return store.Credential{Kind: "token", ID: tok}, nil
	}
	return store.Credential{}, errors.New("no credential")
}

// newRegistryEndpoint serves an endpoint over a registry (with ropts) on a
// SQLite store in a temporary directory.
func newRegistryEndpoint(t *testing.T, log *slog.Logger, m Metrics, opts Options, ropts registry.Options) (*registry.Registry, string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg, err := registry.Load(ctx, db, nil, log, ropts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	s, err := New(reg, siteTokens{}, log, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, s.Handler())
	go s.Serve(ln, mux, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return reg, ln.Addr().String()
}

// wsAgent is an agent's WebSocket.
type wsAgent struct {
	t  *testing.T
	ws *websocket.Conn
}

func dialAgent(t *testing.T, addr, token string) *wsAgent {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+Path, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return &wsAgent{t: t, ws: ws}
}

// send sends m, framed as OpAMP frames it over WebSocket.
func (a *wsAgent) send(m *protobufs.AgentToServer) {
	a.t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := a.ws.WriteMessage(websocket.BinaryMessage, append([]byte{0}, b...)); err != nil {
		a.t.Fatal(err)
	}
}

// roundTrip sends m and returns the answer.
func (a *wsAgent) roundTrip(m *protobufs.AgentToServer) *protobufs.ServerToAgent {
	a.t.Helper()
	a.send(m)
	_ = a.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := a.ws.ReadMessage()
	if err != nil {
		a.t.Fatalf("no answer: %v", err)
	}
	var resp protobufs.ServerToAgent
	if err := proto.Unmarshal(data[1:], &resp); err != nil {
		a.t.Fatal(err)
	}
	return &resp
}

// closeCode reads until the server's close frame and returns its code (0: none).
func (a *wsAgent) closeCode() int {
	_ = a.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := a.ws.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		if err != nil {
			return 0
		}
	}
}

// pollAgent sends m as one plain-HTTP poll and returns the answer.
func pollAgent(t *testing.T, addr, token string, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+Path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("poll: HTTP %d %s", resp.StatusCode, data)
	}
	var out protobufs.ServerToAgent
	if err := proto.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestIdentityConflictFlood: a process presenting an agent's instance UID
// with another site's token, reconnecting at once after each refusal,
// spends its source address's budget of refusals: within it each is
// refused and recorded (one event for the minute) and logged (one line
// for the minute); beyond it each is only counted and asked to retry
// later. The agent's history keeps what it held, and the agent itself
// keeps working.
func TestIdentityConflictFlood(t *testing.T) {
	const (
		flood   = 300
		budget  = 20
		history = 150 // the agent's own events before the flood
	)
	for _, transport := range []string{"websocket", "plain HTTP"} {
		t.Run(transport, func(t *testing.T) {
			var logged syncBuffer
			log := slog.New(slog.NewTextHandler(&logged, nil))
			rec := &recorder{}
			// A budget that does not refill while the test runs.
			reg, addr := newRegistryEndpoint(t, log, Metrics{Reject: rec.reject}, Options{FailureRate: 1e-6, FailureBurst: budget}, registry.Options{})

			uid := uuid.New()
			hello := &protobufs.AgentToServer{InstanceUid: uid[:], Capabilities: 1,
				AgentDescription: &protobufs.AgentDescription{IdentifyingAttributes: []*protobufs.KeyValue{{Key: "service.name",
					Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: "otelcol"}}}}}}
			victim := dialAgent(t, addr, "owner")
			if resp := victim.roundTrip(hello); resp.ErrorResponse != nil {
				t.Fatalf("the agent was refused: %v", resp.ErrorResponse)
			}
			for i := range history - 1 { // and its registration
				reg.AddEvent(uid, "note", "note "+strconv.Itoa(i))
			}

			answers := map[protobufs.ServerErrorResponseType]int{}
			closes := map[int]int{}
			for range flood {
				var resp *protobufs.ServerToAgent
				if transport == "websocket" {
					a := dialAgent(t, addr, "intruder")
					resp = a.roundTrip(hello)
					closes[a.closeCode()]++
					a.ws.Close()
				} else {
					resp = pollAgent(t, addr, "intruder", hello)
				}
				if resp.ErrorResponse == nil {
					t.Fatal("a connection presenting the agent's instance UID with another token was accepted")
				}
				answers[resp.ErrorResponse.Type]++
				if resp.ErrorResponse.Type == protobufs.ServerErrorResponseType_ServerErrorResponseType_Unavailable &&
					resp.ErrorResponse.GetRetryInfo().GetRetryAfterNanoseconds() == 0 {
					t.Error("asked to retry later without saying when")
				}
			}

			refused, unavailable := protobufs.ServerErrorResponseType_ServerErrorResponseType_BadRequest,
				protobufs.ServerErrorResponseType_ServerErrorResponseType_Unavailable
			if answers[refused] != budget || answers[unavailable] != flood-budget {
				t.Errorf("answers %v, want %d refusals (the source's budget) then %d to retry later", answers, budget, flood-budget)
			}
			if transport == "websocket" && (closes[1008] != budget || closes[1013] != flood-budget) {
				t.Errorf("close codes %v, want %d × 1008 then %d × 1013", closes, budget, flood-budget)
			}
			reasons := map[string]int{}
			for _, r := range rec.take() {
				reasons[r]++
			}
			if reasons["identity_conflict"] != budget || reasons["identity_conflict_throttled"] != flood-budget {
				t.Errorf("refusals counted %v, want every one of %d", reasons, flood)
			}
			a, _ := reg.Get(uid)
			own, conflicts := 0, 0
			for _, e := range a.Events {
				if e.Type == registry.EventIdentityConflict {
					conflicts++
				} else {
					own++
				}
			}
			if own != history || conflicts != 1 {
				t.Errorf("history after the flood: %d of the agent's %d own events, %d identity_conflict events (want 1)", own, history, conflicts)
			}
			if lines := strings.Count(logged.String(), "\n"); lines != 1 {
				t.Errorf("%d log lines for %d refusals from one source within a minute, want 1:\n%s", lines, flood, logged.String())
			}
			// The agent itself still works.
			if resp := victim.roundTrip(&protobufs.AgentToServer{InstanceUid: uid[:], SequenceNum: 1, Capabilities: 1}); resp.ErrorResponse != nil {
				t.Fatalf("the agent was refused after the flood: %v", resp.ErrorResponse)
			}
			if a, _ := reg.Get(uid); !a.Connected || a.Credential.ID != "owner" {
				t.Errorf("the agent after the flood: connected %t, credential %q", a.Connected, a.Credential.ID)
			}
		})
	}
}
