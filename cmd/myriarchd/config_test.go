package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/server/oidclogin"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "myriarchd.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// The keys the packaged default config is written with.
func TestSettingKeysAreFixed(t *testing.T) {
	want := []string{"data_dir", "store", "listen", "admin_listen", "estate", "estate_poll", "tls_cert", "tls_key", "client_ca",
		"admin_token_file", "public_url", "heartbeat", "registrations_per_minute", "prune_after", "audit_retention", "notification_window", "log_format", "log_level", "insecure_listen",
		"oidc_issuer", "oidc_client_id", "oidc_client_secret_file", "oidc_role_claim", "oidc_name", "oidc_redirect_url", "oidc_roles"}
	fileOnly := []string{"oidc_roles"}
	var keys, envs []string
	for i := range settings {
		s := &settings[i]
		if s.noFile {
			if s.flag != "config" {
				t.Errorf("--%s has no file key", s.flag)
			}
		} else {
			keys = append(keys, s.key())
		}
		if s.fileOnly != slices.Contains(fileOnly, s.key()) {
			t.Errorf("%s: file only %v", s.key(), s.fileOnly)
		}
		if !s.fileOnly {
			envs = append(envs, s.env())
		}
	}
	if !slices.Equal(keys, want) {
		t.Errorf("file keys = %v, want %v", keys, want)
	}
	for _, k := range want {
		if slices.Contains(envs, "MYRIARCH_"+strings.ToUpper(k)) == slices.Contains(fileOnly, k) {
			t.Errorf("variable MYRIARCH_%s: want one unless the key is of the file only", strings.ToUpper(k))
		}
	}
	if !slices.Contains(envs, "MYRIARCH_CONFIG") {
		t.Error("no MYRIARCH_CONFIG")
	}
	if d := defaultServeConfig(); d.DataDir != "/var/lib/myriarch" {
		t.Errorf("default data dir %s", d.DataDir)
	}
}

func TestPrecedence(t *testing.T) {
	file := writeConfig(t, "listen: 127.0.0.1:1001\nadmin_listen: 127.0.0.1:2001\ndata_dir: /file/data\nheartbeat: 11s\nlog_level: warn\nestate: /file/estate\n")
	other := writeConfig(t, "listen: 127.0.0.1:1009\n")
	type want struct {
		listen, admin, dataDir, estate, logLevel string
		heartbeat                                time.Duration
		insecure                                 bool
	}
	defaults := want{"127.0.0.1:4320", "127.0.0.1:4321", "/var/lib/myriarch", "", "info", 30 * time.Second, false}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want want
	}{
		{"defaults", nil, nil, defaults},
		{"file over defaults", []string{"--config", file}, nil,
			want{"127.0.0.1:1001", "127.0.0.1:2001", "/file/data", "/file/estate", "warn", 11 * time.Second, false}},
		{"environment over file", []string{"--config", file}, map[string]string{
			"MYRIARCH_LISTEN": "127.0.0.1:1002", "MYRIARCH_HEARTBEAT": "12s", "MYRIARCH_LOG_LEVEL": "error", "MYRIARCH_INSECURE_LISTEN": "true"},
			want{"127.0.0.1:1002", "127.0.0.1:2001", "/file/data", "/file/estate", "error", 12 * time.Second, true}},
		{"flag over environment and file", []string{"--config", file, "--listen", "127.0.0.1:1003", "--heartbeat", "13s", "--data-dir", "/flag/data", "--insecure-listen=false"},
			map[string]string{"MYRIARCH_LISTEN": "127.0.0.1:1002", "MYRIARCH_HEARTBEAT": "12s", "MYRIARCH_DATA_DIR": "/env/data", "MYRIARCH_INSECURE_LISTEN": "true"},
			want{"127.0.0.1:1003", "127.0.0.1:2001", "/flag/data", "/file/estate", "warn", 13 * time.Second, false}},
		{"flag over default without a file", []string{"--admin-listen", "127.0.0.1:2003"}, map[string]string{"MYRIARCH_ESTATE": "/env/estate"},
			func() want { w := defaults; w.admin, w.estate = "127.0.0.1:2003", "/env/estate"; return w }()},
		{"MYRIARCH_CONFIG names the file", nil, map[string]string{"MYRIARCH_CONFIG": file},
			want{"127.0.0.1:1001", "127.0.0.1:2001", "/file/data", "/file/estate", "warn", 11 * time.Second, false}},
		{"--config over MYRIARCH_CONFIG", []string{"--config", other}, map[string]string{"MYRIARCH_CONFIG": file},
			func() want { w := defaults; w.listen = "127.0.0.1:1009"; return w }()},
		{"an empty variable is unset", []string{"--config", file}, map[string]string{"MYRIARCH_LISTEN": "", "MYRIARCH_HEARTBEAT": ""},
			want{"127.0.0.1:1001", "127.0.0.1:2001", "/file/data", "/file/estate", "warn", 11 * time.Second, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			cfg, code, done := serveCommand(tt.args, envOf(tt.env), &out, &errb)
			if done {
				t.Fatalf("serve stopped with %d: %s", code, errb.String())
			}
			got := want{cfg.Listen, cfg.AdminListen, cfg.DataDir, cfg.Estate, cfg.LogLevel, cfg.Heartbeat, cfg.InsecureListen}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		name string
		file string // config file content ("" for none)
		args []string
		env  map[string]string
		want []string // each in the message, in this order
	}{
		{name: "unknown key", file: "data_dir: /x\nlisen: 127.0.0.1:1\n",
			want: []string{`lisen (line 2): unknown key (did you mean "listen"?)`}},
		{name: "the file's own path is not a key", file: "config: /etc/other.yaml\n", want: []string{"config (line 1): unknown key"}},
		{name: "wrong type", file: "listen: [127.0.0.1:1]\ninsecure_listen: maybe\n",
			want: []string{`listen (line 1): invalid value a list: expected a string`, `insecure_listen (line 2): invalid value "maybe": expected true or false`}},
		{name: "duplicate key", file: "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n", want: []string{"listen (line 2): duplicate key"}},
		{name: "bad duration", file: "heartbeat: soon\n", want: []string{`heartbeat (line 1): invalid value "soon": expected a duration such as 30s or 5m`}},
		{name: "integer duration", file: "\n\nheartbeat: 30\n", want: []string{`heartbeat (line 3): invalid value "30": expected a duration`}},
		{name: "bad choice in the file", file: "log_format: xml\n", want: []string{`log_format (line 1): must be text or json, got "xml"`}},
		{name: "not a mapping", file: "- listen\n", want: []string{"expected a mapping, got a list"}},
		{name: "invalid YAML", file: "listen: [\n", want: []string{"invalid YAML"}},
		{name: "missing file", args: []string{"--config", "/nonexistent/myriarchd.yaml"}, want: []string{"read config", "/nonexistent/myriarchd.yaml"}},
		{name: "bad duration variable", env: map[string]string{"MYRIARCH_HEARTBEAT": "5"},
			want: []string{`MYRIARCH_HEARTBEAT="5": expected a duration such as 30s or 5m`}},
		{name: "bad boolean variable", env: map[string]string{"MYRIARCH_INSECURE_LISTEN": "sometimes"},
			want: []string{`MYRIARCH_INSECURE_LISTEN="sometimes": expected true or false`}},
		{name: "bad choice variable", env: map[string]string{"MYRIARCH_LOG_LEVEL": "loud"},
			want: []string{`MYRIARCH_LOG_LEVEL="loud": must be one of debug, info, warn, error`}},
		{name: "bad choice flag", args: []string{"--log-format", "xml"}, want: []string{`--log-format "xml": must be text or json`}},
		{name: "a wrong value is reported even when overridden", file: "log_level: loud\n", args: []string{"--log-level", "debug"},
			want: []string{`log_level (line 1): must be one of`}},
		{name: "every problem at once",
			file: "data_dir: /x\nlisen: 127.0.0.1:1\nheartbeat: soon\nlisten: 127.0.0.1:1\nlisten: 127.0.0.1:2\nlog_format: xml\n",
			env:  map[string]string{"MYRIARCH_INSECURE_LISTEN": "sometimes", "MYRIARCH_HEARTBEAT": "5"},
			args: []string{"--log-level", "chatty"},
			want: []string{"4 problem(s)", "lisen (line 2): unknown key", "heartbeat (line 3): invalid value", "listen (line 5): duplicate key",
				"log_format (line 6): must be text or json", `MYRIARCH_HEARTBEAT="5"`, `MYRIARCH_INSECURE_LISTEN="sometimes"`, `--log-level "chatty"`}},
		{name: "negative audit retention", args: []string{"--audit-retention", "-24h"},
			want: []string{"--audit-retention must not be negative, got -24h0m0s"}},
		{name: "audit retention in days", file: "audit_retention: 90d\n",
			want: []string{`audit_retention (line 1): invalid value "90d": expected a duration`}},
		{name: "options", args: []string{"--tls-cert", "/x.crt", "--listen", "0.0.0.0:4320"},
			want: []string{"--tls-cert and --tls-key go together"}},
		{name: "public listener without TLS", args: []string{"--listen", ":4320"},
			want: []string{"--listen :4320 is not a loopback address", "configure --tls-cert and --tls-key, or pass --insecure-listen"}},
		{name: "an unknown role in oidc_roles", file: "oidc_roles:\n  everyone: viewer\n  sre: oper\n",
			want: []string{`oidc_roles.sre (line 3): unknown role "oper" (viewer, operator or admin)`}},
		{name: "an unknown key of a grant", file: "oidc_roles:\n  sre: {role: operator, flets: [edge]}\n",
			want: []string{`oidc_roles.sre.flets (line 2): unknown key (did you mean "fleets"?)`}},
		{name: "a grant that is a list", file: "oidc_roles:\n  sre: [operator]\n",
			want: []string{"oidc_roles.sre (line 2): expected a mapping, got a list"}},
		{name: "oidc_roles not a mapping", file: "oidc_roles: admin\n",
			want: []string{"oidc_roles (line 1): expected a mapping of values of the role claim to roles"}},
		{name: "a claim value twice", file: "oidc_roles:\n  sre: viewer\n  sre: admin\n",
			want: []string{"oidc_roles.sre (line 3): duplicate key"}},
		{name: "the role mapping is no flag", args: []string{"--oidc-roles", "sre=admin"},
			want: []string{"flag provided but not defined: -oidc-roles"}},
		{name: "the role mapping is no variable", env: map[string]string{"MYRIARCH_OIDC_ROLES": "sre=admin"},
			want: []string{"MYRIARCH_OIDC_ROLES is set, but oidc_roles is a key of the config file only"}},
		{name: "sign-in with a provider, every problem", args: []string{"--oidc-issuer", "http://idp.example.com"},
			want: []string{`--oidc-issuer "http://idp.example.com": must be https (http only for a provider on this host`,
				"--oidc-client-id is required with --oidc-issuer", "--oidc-client-secret-file is required with --oidc-issuer", "oidc_roles is empty"}},
		{name: "sign-in settings without an issuer", env: map[string]string{"MYRIARCH_OIDC_CLIENT_ID": "myriarch"},
			want: []string{"--oidc-client-id given without --oidc-issuer"}},
		{name: "no redirect URL for a console on every interface",
			args: []string{"--admin-listen", "0.0.0.0:4321", "--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "m", "--oidc-client-secret-file", "/s"},
			want: []string{"--oidc-redirect-url is required: --admin-listen 0.0.0.0:4321 names no host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			path := ""
			if tt.file != "" {
				path = writeConfig(t, tt.file)
				args = append([]string{"--config", path}, args...)
			}
			var out, errb bytes.Buffer
			_, code, done := serveCommand(args, envOf(tt.env), &out, &errb)
			if !done || code != 2 {
				t.Fatalf("serve = %d (done %v), want 2; stderr:\n%s", code, done, errb.String())
			}
			msg := errb.String()
			if path != "" && !strings.Contains(msg, "config "+path+":") {
				t.Errorf("message does not name the file %s:\n%s", path, msg)
			}
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q not found (in order) in:\n%s", w, msg)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestReferenceListsEverySetting(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"help", "config"}, &out, &out); code != 0 {
		t.Fatalf("help config = %d", code)
	}
	ref := out.String()
	for i := range settings {
		s := &settings[i]
		row := "| `--" + s.flag
		if s.fileOnly {
			if !strings.Contains(ref, "| — | — | `"+s.key()+"` |") || strings.Contains(ref, row) || strings.Contains(ref, s.env()) {
				t.Errorf("reference lacks %s as a key of the file only:\n%s", s.key(), ref)
			}
			continue
		}
		if !strings.Contains(ref, row) || !strings.Contains(ref, "`"+s.env()+"`") {
			t.Errorf("reference lacks --%s / %s:\n%s", s.flag, s.env(), ref)
		}
		if !s.noFile && !strings.Contains(ref, "`"+s.key()+"`") {
			t.Errorf("reference lacks key %s", s.key())
		}
	}
}

// Sign-in with a provider: its settings from the file, the environment and
// flags, and oidc_roles, whose values are a role's name or {role, fleets}.
func TestOIDCSettings(t *testing.T) {
	file := writeConfig(t, "oidc_issuer: https://idp.example.com/realms/ops\noidc_client_id: myriarch\n"+
		"oidc_client_secret_file: /etc/myriarch/oidc-secret\noidc_redirect_url: https://ops.example.com/login/oidc/callback\n"+
		"oidc_roles:\n  platform-admins: admin\n  sre: {role: operator, fleets: [edge, core]}\n  \"everyone\": viewer\n")
	var out, errb bytes.Buffer
	cfg, code, done := serveCommand([]string{"--config", file, "--oidc-role-claim", "roles"}, envOf(map[string]string{"MYRIARCH_OIDC_NAME": "Keycloak"}), &out, &errb)
	if done {
		t.Fatalf("serve stopped with %d: %s", code, errb.String())
	}
	want := oidclogin.Settings{Issuer: "https://idp.example.com/realms/ops", ClientID: "myriarch", ClientSecretFile: "/etc/myriarch/oidc-secret",
		RoleClaim: "roles", Name: "Keycloak", RedirectURL: "https://ops.example.com/login/oidc/callback",
		Roles: oidclogin.Roles{"platform-admins": {Role: "admin"}, "sre": {Role: "operator", Fleets: []string{"edge", "core"}}, "everyone": {Role: "viewer"}}}
	if !reflect.DeepEqual(cfg.OIDC, want) {
		t.Errorf("got  %+v\nwant %+v", cfg.OIDC, want)
	}
	cfg, _, done = serveCommand(nil, envOf(nil), &out, &errb)
	if done || cfg.OIDC.Enabled() || cfg.OIDC.RoleClaim != "groups" || cfg.OIDC.Name != "your provider" {
		t.Errorf("defaults: %+v (stopped %v: %s)", cfg.OIDC, done, errb.String())
	}
}
