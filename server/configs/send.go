package configs

import (
	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
)

// send delivers an agent's desired configuration over its WebSocket, when
// it is still due. An agent that cannot be reached now (plain HTTP, or
// between connections) gets it in the answer to its next message instead.
func (e *Engine) send(s Sender, uid uuid.UUID) {
	e.mu.Lock()
	r := e.records[uid]
	var rc *protobufs.AgentRemoteConfig
	if r != nil && r.connected && e.shouldSend(r) {
		rc = e.remoteConfig(r)
	}
	e.mu.Unlock()
	if rc == nil {
		return
	}
	if !s.Send(uid, &protobufs.ServerToAgent{RemoteConfig: rc}) {
		e.mu.Lock()
		if r.sentHash == hexOf(rc.ConfigHash) {
			r.sendAgain()
		}
		e.mu.Unlock()
	}
}
