// Package adminclient calls the admin API of a running myriarchd: the
// myriarchd client commands and telecraft share it.
package adminclient

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultDataDir is where myriarchd keeps its state, and where the admin
// token is read from by default.
const DefaultDataDir = "/var/lib/myriarch"

// Client calls the admin API of a running myriarchd.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// Flags adds the connection flags every client command shares (--admin,
// --admin-token-file, --data-dir and their MYRIARCH_* variables); the
// returned function makes the client once the flags are parsed.
func Flags(fs *flag.FlagSet) func() (*Client, error) { return FlagsWith(fs, nil) }

// Settings say where a client finds the server.
type Settings struct {
	Admin     string // admin API base URL
	TokenFile string // admin token file ("" = <DataDir>/admin.token)
	DataDir   string
}

// FlagsWith is Flags with a source between the environment and the
// defaults: file (nil: none) is called once the flags are parsed, e.g. to
// read the server's own configuration file. A flag wins over its
// variable, the variable over file, file over the default.
func FlagsWith(fs *flag.FlagSet, file func() (Settings, error)) func() (*Client, error) {
	admin := fs.String("admin", "", "admin API base `URL` (env MYRIARCH_ADMIN; default http://127.0.0.1:4321)")
	tokenFile := fs.String("admin-token-file", "", "admin token `FILE` (env MYRIARCH_ADMIN_TOKEN_FILE; default <data-dir>/admin.token; MYRIARCH_ADMIN_TOKEN holds the token itself, or an API key)")
	dataDir := fs.String("data-dir", "", "server data `DIR` whose admin.token to read (env MYRIARCH_DATA_DIR; default "+DefaultDataDir+")")
	return func() (*Client, error) {
		var f Settings
		if file != nil {
			var err error
			if f, err = file(); err != nil {
				return nil, err
			}
		}
		pick := func(flagVal, env, fileVal, def string) string {
			for _, v := range []string{flagVal, os.Getenv(env), fileVal} {
				if v != "" {
					return v
				}
			}
			return def
		}
		base := pick(*admin, "MYRIARCH_ADMIN", f.Admin, "http://127.0.0.1:4321")
		tok := os.Getenv("MYRIARCH_ADMIN_TOKEN")
		if tok == "" {
			path := pick(*tokenFile, "MYRIARCH_ADMIN_TOKEN_FILE", f.TokenFile, "")
			if path == "" {
				path = filepath.Join(pick(*dataDir, "MYRIARCH_DATA_DIR", f.DataDir, DefaultDataDir), "admin.token")
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("admin token: %w (set --admin-token-file, --data-dir or MYRIARCH_ADMIN_TOKEN)", err)
			}
			tok = strings.TrimSpace(string(data))
		}
		return &Client{base: strings.TrimRight(base, "/"), token: tok, http: &http.Client{Timeout: 30 * time.Second}}, nil
	}
}

// Do sends a request and decodes a 2xx JSON answer into out (a *[]byte
// receives the raw body); other statuses become errors naming the server's
// message.
func (c *Client) Do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	// The audit trail records the request as made with the CLI.
	req.Header.Set("X-Myriarch-Client", "cli")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return answerError(method, path, resp.Status, data)
	}
	switch o := out.(type) {
	case nil:
		return nil
	case *[]byte:
		*o = data
		return nil
	default:
		return json.Unmarshal(data, out)
	}
}

// answerError is a refusal or failure, with the server's message.
func answerError(method, path, status string, data []byte) error {
	var e struct {
		Error    string   `json:"error"`
		Details  []string `json:"details"`
		Problems []struct {
			File    string `json:"file"`
			Line    int    `json:"line"`
			Message string `json:"message"`
		} `json:"problems"` // an estate's, each in its file
	}
	if json.Unmarshal(data, &e) == nil && e.Error != "" {
		msg := e.Error
		for _, d := range e.Details {
			msg += "\n  " + d
		}
		for _, p := range e.Problems {
			msg += fmt.Sprintf("\n  %s:%d: %s", p.File, p.Line, p.Message)
		}
		return fmt.Errorf("%s %s: %s: %s", method, path, status, msg)
	}
	return fmt.Errorf("%s %s: %s: %s", method, path, status, bytes.TrimSpace(data))
}

// Stream sends a request without a body and copies a 2xx answer to w,
// however long it takes (a backup); other statuses are errors as with Do.
func (c *Client) Stream(method, path string, w io.Writer) (int64, error) {
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("X-Myriarch-Client", "cli")
	cl := *c.http
	cl.Timeout = 0 // the answer's time is the data's size
	resp, err := cl.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return 0, answerError(method, path, resp.Status, data)
	}
	return io.Copy(w, resp.Body)
}

// Base is the admin API's base URL, where the browser console is served too.
func (c *Client) Base() string { return c.base }
