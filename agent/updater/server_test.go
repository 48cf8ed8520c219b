package updater

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
	"google.golang.org/protobuf/proto"
)

// opampServer is a real opamp-go server on 127.0.0.1 that records what the
// agent reports, merged the way a server keeps agent state.
type opampServer struct {
	srv server.OpAMPServer

	mu          sync.Mutex
	authHeaders []string
	userAgents  []string
	rejectNext  int // answer this many connection attempts with 401
	rejected    int
	caps        uint64
	uid         []byte
	desc        *protobufs.AgentDescription
	health      *protobufs.ComponentHealth
	pkgStatuses *protobufs.PackageStatuses
	offer       *protobufs.PackagesAvailable // sent once in the next response
	messages    int
}

func startServer(t *testing.T, rejectFirst int) *opampServer {
	t.Helper()
	s := &opampServer{srv: server.New(nil), rejectNext: rejectFirst}
	err := s.srv.Start(server.StartSettings{
		ListenEndpoint: "127.0.0.1:0",
		Settings: server.Settings{Callbacks: types.Callbacks{
			OnConnecting: func(r *http.Request) types.ConnectionResponse {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.authHeaders = append(s.authHeaders, r.Header.Get("Authorization"))
				s.userAgents = append(s.userAgents, r.Header.Get("User-Agent"))
				if s.rejectNext > 0 {
					s.rejectNext--
					s.rejected++
					return types.ConnectionResponse{Accept: false, HTTPStatusCode: http.StatusUnauthorized}
				}
				return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{OnMessage: s.onMessage}}
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.Stop(ctx)
	})
	return s
}

func (s *opampServer) wsURL() string   { return fmt.Sprintf("ws://%s/v1/opamp", s.srv.Addr()) }
func (s *opampServer) httpURL() string { return fmt.Sprintf("http://%s/v1/opamp", s.srv.Addr()) }

func (s *opampServer) onMessage(_ context.Context, _ types.Connection, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages++
	s.uid = m.InstanceUid
	if m.Capabilities != 0 {
		s.caps = m.Capabilities
	}
	if m.AgentDescription != nil {
		s.desc = m.AgentDescription
	}
	if m.Health != nil {
		s.health = m.Health
	}
	if m.PackageStatuses != nil {
		s.pkgStatuses = m.PackageStatuses
	}
	resp := &protobufs.ServerToAgent{
		InstanceUid: m.InstanceUid,
		Capabilities: uint64(protobufs.ServerCapabilities_ServerCapabilities_AcceptsStatus |
			protobufs.ServerCapabilities_ServerCapabilities_OffersPackages),
	}
	if s.desc == nil {
		// Like a real server after a reconnect: ask for everything.
		resp.Flags = uint64(protobufs.ServerToAgentFlags_ServerToAgentFlags_ReportFullState)
	}
	if s.offer != nil {
		resp.PackagesAvailable, s.offer = s.offer, nil
	}
	return resp
}

// snapshot is a copy of what the server knows, safe to inspect.
type snapshot struct {
	authHeaders    []string
	userAgents     []string
	rejected       int
	caps           uint64
	uid            []byte
	identifying    map[string]string
	nonIdentifying map[string]string
	health         *protobufs.ComponentHealth
	pkgStatuses    *protobufs.PackageStatuses
}

func (s *opampServer) snapshot() snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := snapshot{
		authHeaders: append([]string(nil), s.authHeaders...),
		userAgents:  append([]string(nil), s.userAgents...),
		rejected:    s.rejected,
		caps:        s.caps,
		uid:         append([]byte(nil), s.uid...),
	}
	if s.desc != nil {
		sn.identifying = attrMap(s.desc.IdentifyingAttributes)
		sn.nonIdentifying = attrMap(s.desc.NonIdentifyingAttributes)
	}
	if s.health != nil {
		sn.health = proto.Clone(s.health).(*protobufs.ComponentHealth)
	}
	if s.pkgStatuses != nil {
		sn.pkgStatuses = proto.Clone(s.pkgStatuses).(*protobufs.PackageStatuses)
	}
	return sn
}

func (s *opampServer) setOffer(o *protobufs.PackagesAvailable) {
	s.mu.Lock()
	s.offer = o
	s.mu.Unlock()
}

// waitFor polls the server's view until cond holds; the deadline only
// bounds a failing test.
func (s *opampServer) waitFor(t *testing.T, what string, cond func(snapshot) bool) snapshot {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sn := s.snapshot()
		if cond(sn) {
			return sn
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never saw %s; last view: %+v", what, sn)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
