package updater

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// waitConnection polls the connection record until cond holds.
func waitConnection(t *testing.T, stateDir, what string, cond func(*Connection) bool) *Connection {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := ReadConnection(stateDir)
		if err != nil {
			t.Fatal(err)
		}
		if c != nil && cond(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection record never showed %s; last: %+v", what, c)
		}
	}
}

func TestRunRecordsTheConnection(t *testing.T) {
	for _, tt := range []struct {
		name string
		url  func(*opampServer) string
	}{
		{"websocket", (*opampServer).wsURL},
		{"plain http", (*opampServer).httpURL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, 1) // the first attempt gets a 401
			cfg := testConfig(t, tt.url(srv))
			u := newUpdater(t, cfg, WithHeartbeatInterval(50*time.Millisecond))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- u.Run(ctx) }()
			stop := sync.OnceValue(func() error {
				cancel()
				return <-done
			})
			defer stop()

			c := waitConnection(t, cfg.StateDir, "connected", func(c *Connection) bool { return c.Connected })
			if c.Endpoint != tt.url(srv) || c.LastConnected == nil || !c.LastConnected.Equal(c.Since) || c.LastError != "" || c.Stopped {
				t.Errorf("connected record = %+v", c)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			c2, err := ReadConnection(cfg.StateDir)
			if err != nil || c2 == nil {
				t.Fatalf("after stop: %+v, %v", c2, err)
			}
			if c2.Connected || !c2.Stopped || c2.LastConnected == nil || !c2.LastConnected.Equal(*c.LastConnected) {
				t.Errorf("stopped record = %+v", c2)
			}
		})
	}
}

func TestConnectionRecordTransitions(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	read := func() Connection {
		t.Helper()
		c, err := ReadConnection(dir)
		if err != nil || c == nil {
			t.Fatalf("ReadConnection = %+v, %v", c, err)
		}
		return *c
	}
	modTime := func() time.Time {
		t.Helper()
		fi, err := os.Stat(filepath.Join(dir, ConnectionFile))
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}

	r := newConnectionRecord(dir, "http://h/v1/opamp", false, log)
	if c := read(); c.Connected || c.LastConnected != nil || c.Endpoint != "http://h/v1/opamp" {
		t.Fatalf("initial = %+v", c)
	}
	r.failed(errors.New("refused"))
	first := read()
	if first.Connected || first.LastError != "refused" {
		t.Fatalf("after failure = %+v", first)
	}
	r.failed(errors.New("refused"))
	if c := read(); !c.Since.Equal(first.Since) {
		t.Errorf("the same failure again rewrote the record: %+v", c)
	}
	r.connected()
	up := read()
	if !up.Connected || up.LastError != "" || up.LastConnected == nil {
		t.Fatalf("after connect = %+v", up)
	}
	before := modTime()
	r.connected() // a poll over plain HTTP
	if c := read(); !c.Since.Equal(up.Since) || !modTime().Equal(before) {
		t.Errorf("a successful poll rewrote the record: %+v", c)
	}
	r.stopped()
	if c := read(); c.Connected || !c.Stopped || !c.LastConnected.Equal(*up.LastConnected) {
		t.Errorf("after stop = %+v", c)
	}

	// The next run keeps the last connection for the same endpoint only.
	newConnectionRecord(dir, "http://h/v1/opamp", false, log)
	if c := read(); c.Stopped || c.LastConnected == nil || !c.LastConnected.Equal(*up.LastConnected) {
		t.Errorf("restart, same endpoint = %+v", c)
	}
	newConnectionRecord(dir, "http://other/v1/opamp", false, log)
	if c := read(); c.LastConnected != nil {
		t.Errorf("restart, new endpoint = %+v", c)
	}

	// Over WebSocket every connect is a new connection.
	ws := newConnectionRecord(dir, "ws://h/v1/opamp", true, log)
	ws.connected()
	a := read()
	for deadline := time.Now().Add(5 * time.Second); !time.Now().UTC().After(a.Since); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("clock does not advance")
		}
	}
	ws.connected()
	if b := read(); !b.Since.After(a.Since) {
		t.Errorf("a WebSocket reconnect kept Since %v", b.Since)
	}
}
