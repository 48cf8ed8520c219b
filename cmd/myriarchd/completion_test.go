package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/testenv"
	"github.com/myriarch/myriarch/internal/testkit"
	"github.com/myriarch/myriarch/server/servertest"
	"github.com/myriarch/myriarch/test/e2e/site"
)

// The completion scripts, each run by its own shell (bash, zsh, fish)
// against myriarchd and a real server: commands, subcommands, flags and
// their values, and fleet names and agents' UIDs asked of the server the
// environment names.
func TestCompletionInEveryShell(t *testing.T) {
	est := t.TempDir()
	if err := site.WriteGatewayBlueprint(est, "127.0.0.1:4318", "otlphttp", "127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"edge", "core"} {
		if err := site.WriteFile(est, "fleets/"+f+".yaml", "name: "+f+"\nselector: {site.type: "+f+"}\n"+site.GatewayConfig); err != nil {
			t.Fatal(err)
		}
	}
	ts := startTestServer(t, est)
	_, secret, err := ts.Tokens().Create(context.Background(), "edge", nil)
	if err != nil {
		t.Fatal(err)
	}
	col := servertest.Collector(t, ts.OpAMPURL(), secret, "edge-1", "0.149.0", "site.type", "edge")
	testkit.WaitWithin(t, 10*time.Second, "the collector registered", func() bool {
		_, ok := ts.Registry().Peek(col.UID)
		return ok
	})

	// myriarchd on PATH is this test binary, running as myriarchd.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "myriarchd")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), asMyriarchd+"=1",
		"MYRIARCH_ADMIN=http://"+ts.AdminAddr().String(), "MYRIARCH_DATA_DIR="+ts.dataDir, "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(),
		"MYRIARCH_COMPLETE_TIMEOUT=60s") // a loaded test machine's server may take longer than a shell waits

	// Each shell completes a command line (its words, the last being typed).
	shells := map[string]func(words []string) *exec.Cmd{
		"bash": func(words []string) *exec.Cmd {
			script := `source <(myriarchd completion bash) && COMP_WORDS=("$@") && COMP_CWORD=$(($# - 1)) && _myriarchd_complete && printf '%s\n' "${COMPREPLY[@]}"`
			return exec.Command(testenv.Tool(t, "bash", "bash"), append([]string{"-c", script, "bash"}, words...)...)
		},
		"zsh": func(words []string) *exec.Cmd {
			// Outside a completion widget: compdef and compadd are the
			// script's callers, stood in for; words and CURRENT as zsh sets them.
			script := `compdef() { :; }; compadd() { [[ $1 == -a ]] && print -rl -- "${(@P)2}"; }; source <(myriarchd completion zsh); words=("$@"); CURRENT=$#; _myriarchd_complete`
			return exec.Command(testenv.Tool(t, "zsh", "zsh"), append([]string{"-f", "-c", script, "zsh"}, words...)...)
		},
		"fish": func(words []string) *exec.Cmd {
			line := strings.Join(words, " ")
			return exec.Command(testenv.Tool(t, "fish", "fish"), "--no-config", "-c", "myriarchd completion fish | source; complete -C "+shellQuote(line))
		},
	}
	uid := col.UID.String()
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"myriarchd", "fle"}, []string{"fleets"}},
		{[]string{"myriarchd", "fleets", "re"}, []string{"resume", "retry-configs", "retry-offers"}},
		{[]string{"myriarchd", "fleets", "pause", ""}, []string{"core", "edge"}},
		{[]string{"myriarchd", "agents", "show", uid[:8]}, []string{uid}},
		{[]string{"myriarchd", "agents", "list", "--output", ""}, []string{"json", "table", "yaml"}},
		{[]string{"myriarchd", "agents", "list", "--ki"}, []string{"--kind"}},
		{[]string{"myriarchd", "completion", "z"}, []string{"zsh"}},
	} {
		for name, shell := range shells {
			cmd := shell(tc.words)
			cmd.Env = env
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("%s %q: %v\n%s", name, tc.words, err, out)
				continue
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				// fish prints "candidate\tdescription"; the others the candidate.
				if c, _, _ := strings.Cut(l, "\t"); c != "" {
					got = append(got, c)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s %q: completed %q, want %q", name, tc.words, got, tc.want)
			}
		}
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// The scripts the packages install (packaging/completion) are what
// `myriarchd completion SHELL` prints.
func TestPackagedCompletionScripts(t *testing.T) {
	for shell, file := range map[string]string{"bash": "myriarchd.bash", "zsh": "_myriarchd", "fish": "myriarchd.fish"} {
		code, out, errs := runCLI("completion", shell)
		want, err := os.ReadFile(filepath.Join("..", "..", "packaging", "completion", file))
		if err != nil {
			t.Fatal(err)
		}
		if code != 0 || out != string(want) {
			t.Errorf("packaging/completion/%s differs from `myriarchd completion %s` (%d %s): run it again into the file", file, shell, code, errs)
		}
	}
}
