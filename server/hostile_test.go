package server_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/myriarch/myriarch/server"
)

// pollHTTP sends one plain-HTTP OpAMP message and decodes the answer.
func pollHTTP(t *testing.T, ts *testServer, token string, msg *protobufs.AgentToServer) (int, *protobufs.ServerToAgent) {
	t.Helper()
	b, _ := proto.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, "http://"+ts.OpAMPAddr().String()+"/v1/opamp", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m protobufs.ServerToAgent
	if resp.StatusCode == http.StatusOK {
		if err := proto.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, &m
}

// TestRegistrationRateOverPlainHTTP: plain-HTTP registrations (not gated
// by the WebSocket admission) are bounded per credential: past the bound
// a new agent is told to retry later; registered agents carry on.
func TestRegistrationRateOverPlainHTTP(t *testing.T) {
	ts := startServer(t, func(o *server.Options) { o.RegistrationsPerMinute = 3 })
	tok := ts.createToken("site", nil)
	var ok []string
	for i := range 5 {
		uid := newUID(t)
		code, resp := pollHTTP(t, ts, tok.Token, &protobufs.AgentToServer{InstanceUid: uid[:]})
		if code != http.StatusOK {
			t.Fatalf("poll %d: HTTP %d", i, code)
		}
		e := resp.GetErrorResponse()
		switch {
		case i < 3 && e != nil:
			t.Fatalf("registration %d refused: %v", i, e)
		case i < 3:
			ok = append(ok, uid.String())
		case e == nil || e.Type != protobufs.ServerErrorResponseType_ServerErrorResponseType_Unavailable || e.GetRetryInfo().GetRetryAfterNanoseconds() == 0:
			t.Fatalf("registration %d past the bound answered %v, want Unavailable with a retry time", i, resp)
		}
	}
	if n := len(ts.Registry().List("", false)); n != 3 {
		t.Errorf("%d agents registered, want 3", n)
	}
}
