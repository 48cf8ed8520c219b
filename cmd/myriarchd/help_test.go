package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/myriarch/myriarch/internal/buildinfo"
)

func TestHelpExitsZero(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the usage
	}{
		{[]string{"--help"}, "commands:"},
		{[]string{"-h"}, "commands:"},
		{[]string{"help"}, "commands:"},
		{[]string{"help", "--help"}, "usage: myriarchd help"},
		{[]string{"serve", "--help"}, "MYRIARCH_LISTEN, listen:"},
		{[]string{"serve", "-h"}, "--insecure-listen"},
		{[]string{"token", "--help"}, "usage: myriarchd token <subcommand>"},
		{[]string{"token", "help"}, "usage: myriarchd token <subcommand>"},
		{[]string{"token", "create", "--help"}, "--name NAME"},
		{[]string{"token", "list", "--help"}, "-o, --output FORMAT"},
		{[]string{"tokens", "list", "--help"}, "usage: myriarchd tokens list"},
		{[]string{"fleets", "pause", "--help"}, "usage: myriarchd fleets pause NAME"},
		{[]string{"completion", "--help"}, "source <(myriarchd completion bash)"},
		{[]string{"token", "revoke", "--help"}, "usage: myriarchd token revoke"},
		{[]string{"agents", "--help"}, "usage: myriarchd agents <subcommand>"},
		{[]string{"agents", "-h"}, "usage: myriarchd agents <subcommand>"},
		{[]string{"agents", "list", "--help"}, "--kind KIND"},
		{[]string{"agents", "show", "--help"}, "usage: myriarchd agents show"},
		{[]string{"audit", "--help"}, "--outcome OUTCOME"},
		{[]string{"audit", "verify", "--help"}, "usage: myriarchd audit verify"},
		{[]string{"version", "--help"}, "usage: myriarchd version"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, errb.String())
			}
			if errb.Len() > 0 {
				t.Errorf("stderr: %s", errb.String())
			}
			if !strings.HasPrefix(out.String(), "usage: myriarchd") || !strings.Contains(out.String(), tt.want) {
				t.Errorf("stdout lacks %q:\n%s", tt.want, out.String())
			}
		})
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	tests := []struct {
		args []string
		want string // on stderr
	}{
		{nil, "usage: myriarchd <command>"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"serve", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"token"}, "usage: myriarchd token <subcommand>"},
		{[]string{"token", "mint"}, `unknown subcommand "mint"`},
		{[]string{"token", "create"}, "--name is required"},
		{[]string{"token", "revoke"}, "want one token ID"},
		{[]string{"token", "list", "--kind", "x"}, "flag provided but not defined: -kind"},
		{[]string{"agents"}, "usage: myriarchd agents <subcommand>"},
		{[]string{"agents", "show"}, "want one instance UID"},
		{[]string{"agents", "list", "extra"}, `unexpected argument "extra"`},
		{[]string{"audit", "extra"}, `unknown subcommand "extra"`},
		{[]string{"completion", "tcsh"}, `no completion for shell "tcsh"`},
		{[]string{"fleets", "pause"}, "want one fleet NAME"},
		{[]string{"agents", "list", "--output", "xml"}, `--output "xml": want table, json or yaml`},
		{[]string{"audit", "--limit", "-1"}, "--limit must not be negative"},
		{[]string{"audit", "--since", "soon"}, `--since: "soon" is neither an RFC 3339 time`},
		{[]string{"audit", "verify", "extra"}, `unexpected argument "extra"`},
		{[]string{"version", "extra"}, `unexpected argument "extra"`},
		{[]string{"help", "nothing"}, `unknown topic "nothing"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != 2 {
				t.Fatalf("exit %d, want 2; stdout %s stderr %s", code, out.String(), errb.String())
			}
			if !strings.Contains(errb.String(), tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, errb.String())
			}
			if out.Len() > 0 {
				t.Errorf("stdout: %s", out.String())
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || out.String() != "myriarchd "+buildinfo.Version+"\n" {
			t.Errorf("%v: %d %q %q", args, code, out.String(), errb.String())
		}
	}
}
