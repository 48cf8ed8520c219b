package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const testKey = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEnvOverrides(t *testing.T) {
	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "token", "from-file\n")
	fileWithToken := minimal + "state_dir: /var/lib/from-file\n"
	fileWithTokenFile := "server:\n  endpoint: ws://127.0.0.1:4320/v1/opamp\n  token_file: " + tokenFile + "\n"
	tests := []struct {
		name  string
		file  string // "" = no file
		env   map[string]string
		check func(t *testing.T, c *Config)
	}{
		{"file alone", fileWithToken, nil, func(t *testing.T, c *Config) {
			want(t, "endpoint", c.Server.Endpoint, "ws://127.0.0.1:4320/v1/opamp")
			want(t, "token", c.Server.Token, "t")
			want(t, "state_dir", c.StateDir, "/var/lib/from-file")
		}},
		{"endpoint and state dir over the file", fileWithToken, map[string]string{
			"MYRIARCH_SERVER_ENDPOINT": "wss://opamp.example.com/v1/opamp", "MYRIARCH_STATE_DIR": "/state",
		}, func(t *testing.T, c *Config) {
			want(t, "endpoint", c.Server.Endpoint, "wss://opamp.example.com/v1/opamp")
			want(t, "state_dir", c.StateDir, "/state")
			want(t, "token", c.Server.Token, "t")
		}},
		{"token over the file's token_file", fileWithTokenFile, map[string]string{"MYRIARCH_ENROLLMENT_TOKEN": "from-env\n"}, func(t *testing.T, c *Config) {
			want(t, "token", c.Server.Token, "from-env")
			want(t, "token_file", c.Server.TokenFile, "")
		}},
		{"token file over the file's token", fileWithToken, map[string]string{"MYRIARCH_ENROLLMENT_TOKEN_FILE": tokenFile}, func(t *testing.T, c *Config) {
			want(t, "token", c.Server.Token, "")
			want(t, "token_file", c.Server.TokenFile, tokenFile)
			tok, err := c.Server.BearerToken()
			if err != nil || tok != "from-file" {
				t.Errorf("BearerToken = %q, %v (trailing newline not trimmed?)", tok, err)
			}
		}},
		{"empty variable is unset", fileWithToken, map[string]string{"MYRIARCH_SERVER_ENDPOINT": "", "MYRIARCH_MODE": " "}, func(t *testing.T, c *Config) {
			want(t, "endpoint", c.Server.Endpoint, "ws://127.0.0.1:4320/v1/opamp")
			want(t, "mode", c.Mode, ModeBinary)
		}},
		{"container mode over the file", fileWithToken, map[string]string{
			"MYRIARCH_MODE": "container", "MYRIARCH_CONTAINER_NAME": "collector", "MYRIARCH_MINISIGN_PUBLIC_KEYS": " " + testKey + ", ",
			"MYRIARCH_DOWNLOAD_HOSTS": "opamp.example.com, *.mirror.example.com",
		}, func(t *testing.T, c *Config) {
			if !slices.Equal(c.Trust.DownloadHosts, []string{"opamp.example.com", "*.mirror.example.com"}) {
				t.Errorf("download hosts = %q", c.Trust.DownloadHosts)
			}
			want(t, "mode", c.Mode, ModeContainer)
			want(t, "container.name", c.Container.Name, "collector")
			if !slices.Equal(c.Trust.MinisignPublicKeys, []string{testKey}) {
				t.Errorf("keys = %q", c.Trust.MinisignPublicKeys)
			}
		}},
		{"no file: defaults and environment", "", map[string]string{
			"MYRIARCH_SERVER_ENDPOINT": "wss://opamp.example.com/v1/opamp", "MYRIARCH_ENROLLMENT_TOKEN_FILE": tokenFile,
			"MYRIARCH_MODE": "container",
		}, func(t *testing.T, c *Config) {
			def := NewDefaultConfig()
			want(t, "endpoint", c.Server.Endpoint, "wss://opamp.example.com/v1/opamp")
			want(t, "token_file", c.Server.TokenFile, tokenFile)
			want(t, "mode", c.Mode, ModeContainer)
			want(t, "container.name", c.Container.Name, def.Container.Name)
			want(t, "state_dir", c.StateDir, def.StateDir)
			want(t, "docker_host", c.Container.DockerHost, def.Container.DockerHost)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "updater.yaml")
			if tt.file != "" {
				writeFile(t, filepath.Dir(path), "updater.yaml", tt.file)
			}
			c, err := LoadEnv(path, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func want(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func TestEnvProblems(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty", "\n")
	tokenFile := writeFile(t, dir, "token", "tok\n")
	tests := []struct {
		name string
		file string // "" = no file
		env  map[string]string
		want []string // each in one problem, in this order
		not  []string // in no problem
	}{
		{"both token variables", minimal, map[string]string{"MYRIARCH_ENROLLMENT_TOKEN": "t", "MYRIARCH_ENROLLMENT_TOKEN_FILE": tokenFile},
			[]string{"MYRIARCH_ENROLLMENT_TOKEN: set only one of MYRIARCH_ENROLLMENT_TOKEN and MYRIARCH_ENROLLMENT_TOKEN_FILE"}, nil},
		{"token file missing", minimal, map[string]string{"MYRIARCH_ENROLLMENT_TOKEN_FILE": filepath.Join(dir, "nope")},
			[]string{"MYRIARCH_ENROLLMENT_TOKEN_FILE (server.token_file): cannot read token file"}, nil},
		{"token file empty", minimal, map[string]string{"MYRIARCH_ENROLLMENT_TOKEN_FILE": empty},
			[]string{"MYRIARCH_ENROLLMENT_TOKEN_FILE (server.token_file): token file " + empty + " is empty"}, nil},
		{"bad endpoint names the variable, not the file's line", minimal, map[string]string{"MYRIARCH_SERVER_ENDPOINT": "ftp://h/x"},
			[]string{"MYRIARCH_SERVER_ENDPOINT (server.endpoint): scheme must be ws, wss, http or https"}, []string{"line 2"}},
		{"variable over an undecodable key", "server: {endpoint: [x], token: t}\n", map[string]string{"MYRIARCH_SERVER_ENDPOINT": "ws://h/v1/opamp"},
			[]string{"server.endpoint (line 1): invalid value a list: expected a string"}, []string{"MYRIARCH_SERVER_ENDPOINT"}},
		{"bad mode and relative state dir", minimal, map[string]string{"MYRIARCH_MODE": "vm", "MYRIARCH_STATE_DIR": "state"},
			[]string{"MYRIARCH_MODE (mode): must be", "MYRIARCH_STATE_DIR (state_dir): must be an absolute path"}, nil},
		{"bad key", minimal, map[string]string{"MYRIARCH_MINISIGN_PUBLIC_KEYS": testKey + ",nope"},
			[]string{"MYRIARCH_MINISIGN_PUBLIC_KEYS (trust.minisign_public_keys[1]): not a minisign public key"}, []string{"[0]"}},
		{"no file, endpoint only", "", map[string]string{"MYRIARCH_SERVER_ENDPOINT": "ws://h/v1/opamp"},
			[]string{"config from the environment (no file ", "server.token: required", "(or set MYRIARCH_ENROLLMENT_TOKEN or MYRIARCH_ENROLLMENT_TOKEN_FILE)"},
			[]string{"server.endpoint"}},
		{"no file, container mode without a name", "", map[string]string{"MYRIARCH_SERVER_ENDPOINT": "ws://h/v1/opamp", "MYRIARCH_ENROLLMENT_TOKEN": "t", "MYRIARCH_MODE": "container", "MYRIARCH_CONTAINER_NAME": " "},
			nil, nil}, // an empty name is unset: the default applies
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "updater.yaml")
			if tt.file != "" {
				writeFile(t, filepath.Dir(path), "updater.yaml", tt.file)
			}
			_, err := LoadEnv(path, env(tt.env))
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			at := 0
			for _, w := range tt.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("%q not found (in order) in:\n%s", w, msg)
				}
				at += i + len(w)
			}
			for _, n := range tt.not {
				if strings.Contains(msg, n) {
					t.Errorf("%q in:\n%s", n, msg)
				}
			}
		})
	}
}

func TestMissingFileWithoutEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "updater.yaml")
	_, err := LoadEnv(path, env(map[string]string{"UNRELATED": "x", "MYRIARCH_SERVER_ENDPOINT": ""}))
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "read config: ") || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v", err)
	}
}

func TestEnvironmentTable(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Environment() {
		if !strings.HasPrefix(v.Name, "MYRIARCH_") || v.Key == "" || v.Doc == "" || seen[v.Name] {
			t.Errorf("bad entry %+v", v)
		}
		seen[v.Name] = true
	}
	for _, name := range []string{"MYRIARCH_SERVER_ENDPOINT", "MYRIARCH_ENROLLMENT_TOKEN", "MYRIARCH_ENROLLMENT_TOKEN_FILE"} {
		if !seen[name] {
			t.Errorf("%s missing", name)
		}
	}
}

func TestLoadPartialKeepsWhatDecoded(t *testing.T) {
	path := writeFile(t, t.TempDir(), "updater.yaml", "server: {endpoint: ws://h/v1/opamp, token_file: /nonexistent}\nstate_dir: /var/lib/x\n")
	cfg, err := LoadPartial(path)
	var ce *Error
	if !errors.As(err, &ce) || cfg == nil || cfg.StateDir != "/var/lib/x" {
		t.Errorf("LoadPartial = %+v, %v", cfg, err)
	}
	if cfg, err := LoadPartial(filepath.Join(t.TempDir(), "missing.yaml")); cfg != nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %+v, %v", cfg, err)
	}
}
