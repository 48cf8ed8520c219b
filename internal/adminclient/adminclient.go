// Package adminclient finds a running myriarchd (flags, environment, the
// server's own configuration file) and calls its admin API through the
// typed client generated from the API's document (internal/adminapi):
// the myriarchd client commands, telecraft and blueprint-check share it.
package adminclient

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/myriarch/myriarch/internal/adminapi"
)

// DefaultDataDir is where myriarchd keeps its state, and where the admin
// token is read from by default.
const DefaultDataDir = "/var/lib/myriarch"

// Client calls the admin API of a running myriarchd. API's calls answer
// a status other than 2xx with a *StatusError, never a response.
type Client struct {
	API *adminapi.ClientWithResponses
	// Streaming is API without a time limit, for answers whose time is
	// their size (a backup); bound it with the call's context.
	Streaming *adminapi.ClientWithResponses
	base      string
}

// Timeout bounds each call of Client.API.
const Timeout = 30 * time.Second

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
		return New(base, tok)
	}
}

// New returns a client of the admin API at base (a URL) calling with the
// credential token (the admin token or an API key).
func New(base, token string) (*Client, error) {
	base = strings.TrimRight(base, "/")
	api, err := adminapi.NewClientWithResponses(base, adminapi.WithHTTPClient(&doer{token: token, http: &http.Client{Timeout: Timeout}}))
	if err != nil {
		return nil, fmt.Errorf("admin API %q: %w", base, err)
	}
	streaming, err := adminapi.NewClientWithResponses(base, adminapi.WithHTTPClient(&doer{token: token, http: &http.Client{}}))
	if err != nil {
		return nil, fmt.Errorf("admin API %q: %w", base, err)
	}
	return &Client{API: api, Streaming: streaming, base: base}, nil
}

// Base is the admin API's base URL, where the browser console is served too.
func (c *Client) Base() string { return c.base }

// doer sends the generated client's requests with the credential, and
// turns an answer other than 2xx into a *StatusError.
type doer struct {
	token string
	http  *http.Client
}

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 1 << 20

func (d *doer) Do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+d.token)
	// The audit trail records the request as made with the CLI.
	req.Header.Set("X-Myriarch-Client", "cli")
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, newStatusError(req.Method, req.URL.Path, resp.StatusCode, resp.Status, data)
}
