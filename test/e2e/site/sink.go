package site

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Sink receives OTLP/HTTP exports and appends each request body to
// <Dir>/<site>.otlp, where site is the first path segment after /sites/
// (an exporter's endpoint http://ADDR/sites/<site> posts to
// /sites/<site>/v1/logs).
type Sink struct {
	Dir  string
	Addr string
	srv  *http.Server
	mu   sync.Mutex
}

// StartSink listens on a free loopback port, writing under dir (created).
func StartSink(dir string) (*Sink, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Sink{Dir: dir, Addr: ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/sites/")
	site, _, _ := strings.Cut(rest, "/")
	if !ok || site == "" || strings.ContainsAny(site, `/\.`) {
		http.Error(w, "want /sites/<site>/…", http.StatusNotFound)
		return
	}
	var body io.Reader = io.LimitReader(r.Body, 16<<20)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	f, err := os.OpenFile(filepath.Join(s.Dir, site+".otlp"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.Write(append(data, '\n'))
		f.Close()
	}
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
	w.WriteHeader(http.StatusOK)
}

// Has reports whether the site's file holds text.
func (s *Sink) Has(site, text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, _ := os.ReadFile(filepath.Join(s.Dir, site+".otlp"))
	return bytes.Contains(data, []byte(text))
}

// Close stops the sink.
func (s *Sink) Close() error { return s.srv.Close() }

// SendLog posts one OTLP/HTTP JSON log record with body text to a
// collector's OTLP/HTTP receiver at addr.
func SendLog(addr, text string) error {
	body := `{"resourceLogs":[{"resource":{},"scopeLogs":[{"scope":{},"logRecords":[{"body":{"stringValue":` +
		jsonString(text) + `}}]}]}]}`
	resp, err := http.Post("http://"+addr+"/v1/logs", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return &httpError{resp.Status}
	}
	return nil
}

type httpError struct{ status string }

func (e *httpError) Error() string { return "OTLP receiver answered " + e.status }

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// LogRecord is one log record the sink received as OTLP/HTTP JSON, with
// its resource's string attributes.
type LogRecord struct {
	Body     string
	Resource map[string]string
}

// Records returns the log records of the site's file that came as
// OTLP/HTTP JSON (one request per line).
func (s *Sink) Records(site string) []LogRecord {
	s.mu.Lock()
	data, _ := os.ReadFile(filepath.Join(s.Dir, site+".otlp"))
	s.mu.Unlock()
	type anyValue struct {
		StringValue string `json:"stringValue"`
	}
	type kv struct {
		Key   string   `json:"key"`
		Value anyValue `json:"value"`
	}
	var out []LogRecord
	for _, line := range bytes.Split(data, []byte("\n")) {
		var req struct {
			ResourceLogs []struct {
				Resource struct {
					Attributes []kv `json:"attributes"`
				} `json:"resource"`
				ScopeLogs []struct {
					LogRecords []struct {
						Body anyValue `json:"body"`
					} `json:"logRecords"`
				} `json:"scopeLogs"`
			} `json:"resourceLogs"`
		}
		if json.Unmarshal(line, &req) != nil {
			continue
		}
		for _, rl := range req.ResourceLogs {
			res := map[string]string{}
			for _, a := range rl.Resource.Attributes {
				res[a.Key] = a.Value.StringValue
			}
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					out = append(out, LogRecord{Body: lr.Body.StringValue, Resource: res})
				}
			}
		}
	}
	return out
}
