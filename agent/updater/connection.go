package updater

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/myriarch/myriarch/agent/statefile"
)

// ConnectionFile is the file under state_dir where the running updater
// records its connection to the server (for `myriarch-updater status`).
// It is rewritten atomically when the connection changes, never per
// message or poll.
const ConnectionFile = "connection.json"

// Connection is the updater's last recorded connection to the server.
type Connection struct {
	// Endpoint is server.endpoint without any user:password.
	Endpoint  string `json:"endpoint"`
	Connected bool   `json:"connected"`
	// Since is when the state below began: the connection (for WebSocket
	// the current one), the failures, or the stop.
	Since time.Time `json:"since"`
	// LastConnected is the last successful connection, nil if there has
	// been none (the record keeps it across restarts).
	LastConnected *time.Time `json:"last_connected,omitempty"`
	// LastError is why the last attempt failed, while not connected.
	LastError string `json:"last_error,omitempty"`
	// Stopped says the updater stopped (Connected is false).
	Stopped bool `json:"stopped,omitempty"`
}

// ReadConnection returns the connection recorded in stateDir, nil when
// there is none yet.
func ReadConnection(stateDir string) (*Connection, error) {
	var c Connection
	ok, err := statefile.Read(filepath.Join(stateDir, ConnectionFile), &c)
	if err != nil || !ok {
		return nil, err
	}
	return &c, nil
}

// connectionRecord keeps ConnectionFile up to date from the OpAMP client's
// callbacks.
type connectionRecord struct {
	path string
	log  *slog.Logger
	// renew says every OnConnect is a new connection (WebSocket); over
	// plain HTTP it is called for every successful poll.
	renew bool

	mu  sync.Mutex
	cur Connection
}

// newConnectionRecord records "not connected yet" for endpoint, keeping
// the last successful connection of an earlier run.
func newConnectionRecord(stateDir, endpoint string, renew bool, log *slog.Logger) *connectionRecord {
	r := &connectionRecord{path: filepath.Join(stateDir, ConnectionFile), log: log, renew: renew}
	prev, err := ReadConnection(stateDir)
	if err != nil {
		log.Warn("replacing the unreadable connection record", "err", err)
	}
	r.cur = Connection{Endpoint: endpoint, Since: time.Now().UTC()}
	if prev != nil && prev.Endpoint == endpoint {
		r.cur.LastConnected = prev.LastConnected
	}
	r.write()
	return r
}

func (r *connectionRecord) connected() {
	r.change(func(c *Connection) bool {
		if c.Connected && !r.renew {
			return false
		}
		now := time.Now().UTC()
		*c = Connection{Endpoint: c.Endpoint, Connected: true, Since: now, LastConnected: &now}
		return true
	})
}

func (r *connectionRecord) failed(err error) {
	msg := fmt.Sprint(err)
	r.change(func(c *Connection) bool {
		if !c.Connected && c.LastError == msg {
			return false
		}
		*c = Connection{Endpoint: c.Endpoint, Since: time.Now().UTC(), LastConnected: c.LastConnected, LastError: msg}
		return true
	})
}

func (r *connectionRecord) stopped() {
	r.change(func(c *Connection) bool {
		*c = Connection{Endpoint: c.Endpoint, Since: time.Now().UTC(), LastConnected: c.LastConnected, Stopped: true}
		return true
	})
}

func (r *connectionRecord) change(f func(*Connection) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f(&r.cur) {
		r.write()
	}
}

// write is called with mu held (or before the record is shared).
func (r *connectionRecord) write() {
	if err := statefile.Write(r.path, &r.cur); err != nil {
		r.log.Warn("recording the connection state", "err", err)
	}
}
