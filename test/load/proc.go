//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is a myriarchd process on loopback.
type server struct {
	bin, dataDir, estate, logPath string
	logLevel                      string
	store                         string // --store; "": SQLite
	tlsCert, tlsKey               string // -transport wss
	opampAddr, adminAddr          string
	heartbeat                     time.Duration
	env                           []string // extra environment, e.g. GOGC=50
	cmd                           *exec.Cmd
	done                          chan struct{}
	adminToken                    string
	http                          *http.Client
}

func (s *server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "serve", "--data-dir", s.dataDir, "--listen", s.opampAddr,
		"--admin-listen", s.adminAddr, "--estate", s.estate, "--heartbeat", s.heartbeat.String(),
		"--log-format", "json", "--log-level", s.logLevel,
		// Every simulated host enrolls with one token, faster than a site would.
		"--registrations-per-minute", "0")
	if s.tlsCert != "" {
		cmd.Args = append(cmd.Args, "--tls-cert", s.tlsCert, "--tls-key", s.tlsKey)
	}
	if s.store != "" {
		cmd.Args = append(cmd.Args, "--store", s.store)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), s.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // dies with the test
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start myriarchd: %w", err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(s.done) }()
	s.http = &http.Client{Timeout: 120 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("myriarchd exited at start (log %s)", s.logPath)
		default:
		}
		if tok, err := os.ReadFile(filepath.Join(s.dataDir, "admin.token")); err == nil {
			s.adminToken = strings.TrimSpace(string(tok))
			if code, err := s.api("GET", "/api/v1/tokens", nil, nil); err == nil && code == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	return fmt.Errorf("myriarchd did not answer within 60 s (log %s)", s.logPath)
}

// stop sends SIGINT (graceful: closes agent connections, flushes) and
// kills the process group after 30 s.
func (s *server) stop() time.Duration {
	if s.cmd == nil {
		return 0
	}
	t0 := time.Now()
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd = nil
	return time.Since(t0)
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) api(method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+s.adminAddr+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// metric returns the sum of a Prometheus counter/gauge family from /metrics.
func (s *server) metric(name string) (float64, error) {
	req, _ := http.NewRequest("GET", "http://"+s.adminAddr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum, nil
}

// metricLines returns the samples of one family, for the report.
func (s *server) metricLines(name string) string {
	req, _ := http.NewRequest("GET", "http://"+s.adminAddr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	resp, err := s.http.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, name) {
			out = append(out, strings.TrimPrefix(line, name))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// procSample is a process's RSS and cumulative CPU time.
type procSample struct {
	at    time.Time
	rssKB int64
	cpu   time.Duration
}

func sampleProc(pid int) (procSample, error) {
	ps := procSample{at: time.Now()}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ps, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			ps.rssKB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ps, err
	}
	// Fields after the command name (which may contain spaces): utime is 14th, stime 15th.
	rest := string(stat[bytes.LastIndexByte(stat, ')')+2:])
	f := strings.Fields(rest)
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stt, _ := strconv.ParseInt(f[12], 10, 64)
	ps.cpu = time.Duration(ut+stt) * (time.Second / 100) // USER_HZ = 100 on Linux
	return ps, nil
}

// cpuShare is the CPU used between two samples, in cores.
func cpuShare(a, b procSample) float64 {
	return float64(b.cpu-a.cpu) / float64(b.at.Sub(a.at))
}

// saveProfile stores one of myriarchd's runtime profiles (e.g. heap) at
// path, or only reads it when path is "".
func (s *server) saveProfile(name, path string) error {
	req, _ := http.NewRequest("GET", "http://"+s.adminAddr+"/debug/pprof/"+name, nil)
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s profile: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s profile: %s", name, resp.Status)
	}
	if path == "" {
		_, err := io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("save %s profile: %w", name, err)
	}
	return f.Close()
}

// machineCPU is the machine's busy and total CPU time since boot, from
// /proc/stat, in clock ticks.
type machineCPU struct{ busy, total int64 }

func sampleMachine() machineCPU {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	var m machineCPU
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i >= 8 { // guest time is counted in user already
			break
		}
		m.total += n
		if i != 3 && i != 4 { // idle, iowait
			m.busy += n
		}
	}
	return m
}

// busyShare is how busy the machine's CPUs were between two samples (0–1).
func busyShare(a, b machineCPU) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64(b.busy-a.busy) / float64(b.total-a.total)
}
