package site

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/myriarch/myriarch/test/peers/peerrun"
)

// Server is a myriarchd process.
type Server struct {
	Bin, DataDir, Estate, LogPath string
	OpAMPAddr, AdminAddr          string
	// Env is added to the process's environment (MYRIARCH_* settings).
	Env        []string
	proc       *peerrun.Process
	adminToken string
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago, below the ephemeral port range (peerrun.LocalAddr), so the busy test
// run's outgoing connections do not take it before myriarchd listens.
func FreeAddr() (string, error) { return peerrun.LocalAddr() }

// StartServer starts myriarchd and waits until its admin API answers.
// Empty addresses get free loopback ports.
func StartServer(bin, dataDir, estate, logPath, opampAddr, adminAddr string) (*Server, error) {
	var err error
	if opampAddr == "" {
		if opampAddr, err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	if adminAddr == "" {
		if adminAddr, err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	s := &Server{Bin: bin, DataDir: dataDir, Estate: estate, LogPath: logPath, OpAMPAddr: opampAddr, AdminAddr: adminAddr}
	return s, s.Start()
}

// Start (re)starts the process on the same data dir and addresses.
func (s *Server) Start() error {
	args := []string{"serve", "--data-dir", s.DataDir, "--listen", s.OpAMPAddr, "--admin-listen", s.AdminAddr, "--log-format", "json"}
	if s.Estate != "" {
		args = append(args, "--estate", s.Estate)
	}
	var env []string // nil: the test's own
	if len(s.Env) > 0 {
		env = append(os.Environ(), s.Env...)
	}
	p, err := peerrun.Start(s.Bin, args, env, s.LogPath)
	if err != nil {
		return err
	}
	s.proc = p
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.Done():
			return fmt.Errorf("myriarchd exited: %v (log %s)", p.Err(), s.LogPath)
		default:
		}
		if tok, err := os.ReadFile(filepath.Join(s.DataDir, "admin.token")); err == nil {
			s.adminToken = strings.TrimSpace(string(tok))
			if code, _ := s.API("GET", "/api/v1/tokens", nil, nil); code == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Stop(5 * time.Second)
	return fmt.Errorf("myriarchd did not answer within 30 s (log %s)", s.LogPath)
}

// Stop sends SIGINT and waits.
func (s *Server) Stop() error {
	if s.proc == nil {
		return nil
	}
	err := s.proc.Stop(10 * time.Second)
	s.proc = nil
	return err
}

// Signal sends sig to the myriarchd process (SIGSTOP/SIGCONT freeze and
// thaw it).
func (s *Server) Signal(sig syscall.Signal) error {
	if s.proc == nil {
		return errors.New("myriarchd is not running")
	}
	p, err := os.FindProcess(s.proc.Pid())
	if err != nil {
		return err
	}
	return p.Signal(sig) // os, not syscall.Kill: the package compiles for Windows too
}

// Exited is closed when the running process has exited (nil when none
// runs).
func (s *Server) Exited() <-chan struct{} {
	if s.proc == nil {
		return nil
	}
	return s.proc.Done()
}

// OpAMPURL is the WebSocket endpoint for agents.
func (s *Server) OpAMPURL() string { return "ws://" + s.OpAMPAddr + "/v1/opamp" }

// Text GETs an admin API path that answers with text (a configuration body).
func (s *Server) Text(path string) (int, string, error) {
	var raw rawText
	code, err := s.API("GET", path, nil, &raw)
	return code, string(raw), err
}

// rawText takes an answer as it is.
type rawText []byte

// API calls the admin API; out (if non-nil) receives the decoded JSON.
func (s *Server) API(method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+s.AdminAddr+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if raw, ok := out.(*rawText); ok {
		*raw = data
		return resp.StatusCode, nil
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w: %s", method, path, err, data)
		}
	}
	return resp.StatusCode, nil
}

// CreateToken makes an enrollment token and returns its id and secret.
func (s *Server) CreateToken(name string, labels map[string]string) (id, secret string, err error) {
	var out struct{ ID, Token string }
	code, err := s.API("POST", "/api/v1/tokens", map[string]any{"name": name, "labels": labels}, &out)
	if err == nil && code != http.StatusCreated {
		err = fmt.Errorf("create token: HTTP %d", code)
	}
	return out.ID, out.Token, err
}

// Agent is the subset of the agent JSON the tests read.
type Agent struct {
	InstanceUID    string            `json:"instanceUid"`
	Kind           string            `json:"kind"`
	Online         bool              `json:"online"`
	Identifying    map[string]string `json:"identifying"`
	NonIdentifying map[string]string `json:"nonIdentifying"`
	Attributes     map[string]string `json:"attributes"`
	Pairing        struct {
		State     string   `json:"state"`
		Updater   *string  `json:"updater"`
		Collector *string  `json:"collector"`
		Claimants []string `json:"claimants"`
		Reason    string   `json:"reason"`
	} `json:"pairing"`
	Assignment struct {
		Fleet     *string `json:"fleet"`
		Error     *string `json:"error"`
		Revision  *string `json:"revision"`
		Blueprint *string `json:"blueprint"`
		Assigned  *string `json:"assigned"`
		Desired   *string `json:"desired"`
		Failed    *string `json:"failed"`
		Reported  struct {
			Hash   *string `json:"hash"`
			Status string  `json:"status"`
			Error  *string `json:"error"`
		} `json:"reported"`
		SyncState string  `json:"syncState"`
		Context   *string `json:"context"`
		Warnings  []struct {
			Kind, Component, Variable, Source, Reason string
		} `json:"warnings"`
	} `json:"assignment"`
	Offer *struct {
		Package string  `json:"package"`
		Version string  `json:"version"`
		State   string  `json:"state"`
		Error   *string `json:"error"`
	} `json:"offer"`
	Events []struct {
		Time    time.Time `json:"time"`
		Type    string    `json:"type"`
		Message string    `json:"message"`
	} `json:"events"`
}

// HasEvent reports whether the agent's history holds an event of type typ.
func (a *Agent) HasEvent(typ string) bool {
	for _, e := range a.Events {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// Str reads an optional string of the JSON ("" for null).
func Str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// OfferState is the offer's state or "".
func (a *Agent) OfferState() string {
	if a.Offer == nil {
		return ""
	}
	return a.Offer.State
}

// GetAgent fetches one agent; ok is false on 404.
func (s *Server) GetAgent(uid string) (Agent, bool, error) {
	var a Agent
	code, err := s.API("GET", "/api/v1/agents/"+uid, nil, &a)
	if code == http.StatusNotFound {
		return a, false, nil
	}
	return a, err == nil && code == 200, err
}

// Agents lists agents of a kind ("" for all).
func (s *Server) Agents(kind string) ([]Agent, error) {
	var out struct{ Agents []Agent }
	path := "/api/v1/agents"
	if kind != "" {
		path += "?kind=" + kind
	}
	_, err := s.API("GET", path, nil, &out)
	return out.Agents, err
}

// Reload asks myriarchd to reload its estate.
func (s *Server) Reload() error {
	var out map[string]any
	code, err := s.API("POST", "/api/v1/estate/reload", nil, &out)
	if err == nil && code != 200 {
		err = fmt.Errorf("estate reload: HTTP %d: %v", code, out)
	}
	return err
}

// WaitAgent polls until cond holds for the agent or timeout passes.
func (s *Server) WaitAgent(uid string, timeout time.Duration, cond func(Agent) bool) (Agent, error) {
	deadline := time.Now().Add(timeout)
	var last Agent
	for time.Now().Before(deadline) {
		a, ok, err := s.GetAgent(uid)
		if err == nil && ok {
			last = a
			if cond(a) {
				return a, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, _ := json.MarshalIndent(last, "", "  ")
	return last, errors.New("timed out; last seen:\n" + string(b))
}
