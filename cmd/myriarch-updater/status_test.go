package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/testkit"

	kservice "github.com/kardianos/service"

	"github.com/myriarch/myriarch/internal/buildinfo"
	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
	"github.com/myriarch/myriarch/internal/testenv"
)

// fakeService stands for the OS service manager.
type fakeService struct {
	state string
	err   error
}

func (f fakeService) Status() (string, error) { return f.state, f.err }
func (f fakeService) Platform() string        { return "linux-systemd" }

func withService(s fakeService, newErr error) func(string) (serviceStatus, error) {
	return func(string) (serviceStatus, error) {
		if newErr != nil {
			return nil, newErr
		}
		return s, nil
	}
}

// statusConfig writes testdata/status/updater.yaml.tmpl with TESTDATA
// replaced by stateRoot (testdata/status itself, or a copy of it) and
// returns its path.
func statusConfig(t *testing.T, stateRoot string) string {
	t.Helper()
	tmpl, err := os.ReadFile("testdata/status/updater.yaml.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "updater.yaml")
	if err := os.WriteFile(path, bytes.ReplaceAll(tmpl, []byte("TESTDATA"), []byte(stateRoot)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStatusGolden(t *testing.T) {
	fixture, err := filepath.Abs("testdata/status")
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nothing-here")
	tests := []struct {
		name     string
		root     string // TESTDATA in the config
		service  fakeService
		json     bool
		golden   string
		wantCode int
	}{
		{"recorded state", fixture, fakeService{state: "running"}, false, "golden.txt", 0},
		{"recorded state as JSON", fixture, fakeService{state: "running"}, true, "golden.json", 0},
		// A host where the updater never ran: nothing is wrong with status.
		{"not installed, no state dir", missing, fakeService{state: "not installed"}, false, "empty.golden.txt", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := statusConfig(t, tt.root)
			var stdout, stderr bytes.Buffer
			code := cmdStatus(cfg, tt.json, &stdout, &stderr, withService(tt.service, nil))
			if code != tt.wantCode || stderr.Len() > 0 {
				t.Fatalf("exit %d, stderr %q\n%s", code, stderr.String(), stdout.String())
			}
			got := stdout.String()
			if tt.json && !json.Valid([]byte(got)) {
				t.Fatalf("not JSON:\n%s", got)
			}
			got = strings.NewReplacer(cfg, "<config>", tt.root, "TESTDATA", buildinfo.Version+" ", "<version> ", `"`+buildinfo.Version+`"`, `"<version>"`).Replace(got)
			testkit.Golden(t, filepath.Join("testdata/status", tt.golden), got, *update)
		})
	}
}

// copyFixture copies testdata/status to a temporary directory.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS("testdata/status")); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestStatusCases(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, root string)
		// unprivileged runs the case without root's power to read any file.
		unprivileged bool
		service      fakeService
		newErr       error
		wantCode     int
		want         []string
	}{
		{
			name:     "service query fails",
			service:  fakeService{state: "unknown", err: errors.New("systemctl: exit status 1")},
			wantCode: 1,
			want:     []string{"service      unknown (linux-systemd)", "problem      service: systemctl: exit status 1"},
		},
		{
			name:    "no service manager",
			newErr:  kservice.ErrNoServiceSystemDetected,
			want:    []string{"service      unavailable\n", "note         no service manager on this host"},
			service: fakeService{},
		},
		{
			name: "corrupt state file",
			change: func(t *testing.T, root string) {
				write(t, filepath.Join(root, "state", "connection.json"), "{nope")
			},
			service:  fakeService{state: "running"},
			wantCode: 1,
			want:     []string{"connection   unknown (its record cannot be read: see the problems)", "problem      ", "connection.json is corrupt"},
		},
		{
			name: "connected, but the service stopped since",
			change: func(t *testing.T, root string) {
				write(t, filepath.Join(root, "state", "connection.json"),
					`{"endpoint":"wss://h/v1/opamp","connected":true,"since":"2025-06-01T10:00:00Z","last_connected":"2025-06-01T10:00:00Z"}`)
			},
			service: fakeService{state: "stopped"},
			want:    []string{"connection   connected since 2025-06-01T10:00:00Z (as last recorded; the service is stopped)"},
		},
		{
			name: "self-update waiting for confirmation",
			change: func(t *testing.T, root string) {
				write(t, filepath.Join(root, "state", "selfupdate", "pending.json"),
					`{"from":"0.1.0","to":"0.1.1","hash":"11","executable":"/x","backup":"/y","applied":"2025-06-01T09:59:00Z"}`)
				write(t, filepath.Join(root, "state", "install-journal.json"),
					`{"kind":"self","package":"myriarch-updater","version":"0.1.1","step":"swapped","reason":"the new binary did not start","started":"2025-06-01T09:58:00Z","updated":"2025-06-01T09:59:00Z"}`)
			},
			service: fakeService{state: "running"},
			want: []string{
				"self-update  0.1.0 -> 0.1.1 applied 2025-06-01T09:59:00Z, waiting for the new binary to confirm it",
				"offer        myriarch-updater 0.1.1: in progress, step \"swapped\"",
				"\n             rolling back: the new binary did not start\n",
			},
		},
		{
			name:         "state readable by root only",
			unprivileged: true,
			change: func(t *testing.T, root string) {
				if err := os.Chmod(filepath.Join(root, "state", "collector-installed.json"), 0); err != nil {
					t.Fatal(err)
				}
			},
			service:  fakeService{state: "running"},
			wantCode: 1,
			want:     []string{"permission denied", "run status as root"},
		},
		{
			name: "container mode reads the container state files",
			change: func(t *testing.T, root string) {
				setMode(t, root, "container")
				write(t, filepath.Join(root, "state", "container-installed.json"),
					`{"version":"0.149.0","id":"sha256:1d","ref":"otel/c:0.149.0","digest":"sha256:ab"}`)
			},
			service: fakeService{state: "running"},
			want:    []string{"mode         container", "0.149.0 (found running, not installed by the updater), image otel/c:0.149.0@sha256:ab"},
		},
		{
			name:     "unknown mode",
			change:   func(t *testing.T, root string) { setMode(t, root, "vm") },
			service:  fakeService{state: "running"},
			wantCode: 1,
			want:     []string{`unknown collector mode "vm" (known: binary, container)`},
		},
		{
			name: "a signed keyring in force",
			change: func(t *testing.T, root string) {
				k := keyringtest.NewKey(t)
				appendFile(t, filepath.Join(root, "updater.yaml"), "trust:\n  root_keys: ["+k.Text+"]\n")
				data, _ := json.Marshal(keyringtest.Sign(k, keyringtest.Doc{Serial: 5}.JSON(t)))
				write(t, filepath.Join(root, "state", "keyring.json"), string(data))
			},
			service: fakeService{state: "running"},
			want:    []string{"keyring      serial 5\n"},
		},
		{
			name: "a kept keyring signed by no pinned root",
			change: func(t *testing.T, root string) {
				appendFile(t, filepath.Join(root, "updater.yaml"), "trust:\n  root_keys: ["+keyringtest.NewKey(t).Text+"]\n")
				data, _ := json.Marshal(keyringtest.Sign(keyringtest.NewKey(t), keyringtest.Doc{Serial: 5}.JSON(t)))
				write(t, filepath.Join(root, "state", "keyring.json"), string(data))
			},
			service:  fakeService{state: "running"},
			wantCode: 1,
			want:     []string{"keyring      not in force: the keyring kept in ", "no longer verifies", "problem      keyring: "},
		},
		{
			name: "no config file and no environment",
			change: func(t *testing.T, root string) {
				if err := os.Remove(filepath.Join(root, "updater.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			service:  fakeService{state: "not installed"},
			wantCode: 1,
			want:     []string{"problem      config: read config: ", "note         showing the default state and storage directories"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.unprivileged && testenv.Unprivileged(t) {
				return
			}
			root := copyFixture(t)
			cfg := filepath.Join(root, "updater.yaml")
			tmpl, err := os.ReadFile(filepath.Join(root, "updater.yaml.tmpl"))
			if err != nil {
				t.Fatal(err)
			}
			write(t, cfg, string(bytes.ReplaceAll(tmpl, []byte("TESTDATA"), []byte(root))))
			if tt.change != nil {
				tt.change(t, root)
			}
			var stdout, stderr bytes.Buffer
			code := cmdStatus(cfg, false, &stdout, &stderr, withService(tt.service, tt.newErr))
			out := stdout.String()
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\n%s", code, tt.wantCode, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestStatusIsReadOnly checks that status creates nothing, even where
// `run` or `inspect` would create the state dir and the instance UID.
func TestStatusIsReadOnly(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	cfg := statusConfig(t, root)
	var stdout bytes.Buffer
	if code := cmdStatus(cfg, false, &stdout, &stdout, withService(fakeService{state: "stopped"}, nil)); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stdout.String())
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("status created %s (%v)", root, err)
	}
}

func TestStatusFlags(t *testing.T) {
	if code, _, _ := runCmd(t, "status", "--json", "extra"); code != 2 {
		t.Errorf("status with an argument: exit %d", code)
	}
	if code, _, _ := runCmd(t, "validate", "--json"); code != 2 {
		t.Errorf("--json outside status: exit %d", code)
	}
}

// setMode rewrites the fixture's updater.yaml to the collector mode name.
func setMode(t *testing.T, root, name string) {
	t.Helper()
	cfg := filepath.Join(root, "updater.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	write(t, cfg, strings.Replace(string(b), "mode: binary", "mode: "+name, 1))
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestStatusNotesPermissionOnce(t *testing.T) {
	var r statusReport
	denied := &os.PathError{Op: "open", Path: "/var/lib/myriarch-updater/x", Err: os.ErrPermission}
	r.problem("%v", denied)
	r.problem("read: %v", fmt.Errorf("wrapped: %w", denied))
	r.problem("%v", errors.New("other"))
	if len(r.Problems) != 3 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "run status as root") {
		t.Errorf("problems %q, notes %q", r.Problems, r.Notes)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
