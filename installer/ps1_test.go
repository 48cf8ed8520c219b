//go:build linux

package installer_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// psStructure checks what can be checked of a PowerShell script without PowerShell:
// brackets balance outside strings and comments, and strings, here-strings and block
// comments are closed. It returns the first problem with its line.
func psStructure(src string) error {
	type open struct {
		ch   byte
		line int
	}
	var stack []open
	line := 1
	closing := map[byte]byte{')': '(', '}': '{', ']': '['}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\n':
			line++
		case c == '<' && strings.HasPrefix(src[i:], "<#"):
			end := strings.Index(src[i:], "#>")
			if end < 0 {
				return fmt.Errorf("line %d: block comment not closed", line)
			}
			line += strings.Count(src[i:i+end], "\n")
			i += end + 1
		case c == '#':
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				return nil
			}
			i += end - 1
		case c == '@' && (strings.HasPrefix(src[i:], "@\"\n") || strings.HasPrefix(src[i:], "@'\n")):
			term := "\n" + string(src[i+1]) + "@"
			end := strings.Index(src[i+2:], term)
			if end < 0 {
				return fmt.Errorf("line %d: here-string not closed", line)
			}
			line += strings.Count(src[i:i+2+end+len(term)], "\n")
			i += 2 + end + len(term) - 1
		case c == '\'':
			j := i + 1
			for ; j < len(src); j++ {
				if src[j] == '\'' {
					if j+1 < len(src) && src[j+1] == '\'' {
						j++
						continue
					}
					break
				}
			}
			if j >= len(src) {
				return fmt.Errorf("line %d: single-quoted string not closed", line)
			}
			line += strings.Count(src[i:j], "\n")
			i = j
		case c == '"':
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '`' {
					j++
				}
			}
			if j >= len(src) {
				return fmt.Errorf("line %d: double-quoted string not closed", line)
			}
			if err := psStructure(subexpressions(src[i+1 : j])); err != nil {
				return fmt.Errorf("line %d: in a string: %w", line, err)
			}
			line += strings.Count(src[i:j], "\n")
			i = j
		case c == '`':
			i++ // escaped character, including line continuations
		case c == '(' || c == '{' || c == '[':
			stack = append(stack, open{c, line})
		case c == ')' || c == '}' || c == ']':
			if len(stack) == 0 || stack[len(stack)-1].ch != closing[c] {
				return fmt.Errorf("line %d: unexpected %c", line, c)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		o := stack[len(stack)-1]
		return fmt.Errorf("line %d: %c not closed", o.line, o.ch)
	}
	return nil
}

var subexprRe = regexp.MustCompile("\\$\\(")

// subexpressions returns the $( ... ) parts of a double-quoted string's text as code; the
// rest of the text does not matter for bracket balance.
func subexpressions(s string) string {
	var b strings.Builder
	for _, loc := range subexprRe.FindAllStringIndex(s, -1) {
		depth, closed := 0, false
		for j := loc[0] + 1; j < len(s) && !closed; j++ {
			if s[j] == '(' {
				depth++
			} else if s[j] == ')' {
				depth--
				if depth == 0 {
					b.WriteString(s[loc[0]+1:j+1] + "\n")
					closed = true
				}
			}
		}
		if !closed {
			b.WriteString(s[loc[0]+1:] + "\n") // reported as an unclosed (
		}
	}
	return b.String()
}

func TestPowerShellStructure(t *testing.T) {
	b, err := os.ReadFile("install.ps1")
	if err != nil {
		t.Fatal(err)
	}
	if err := psStructure(string(b)); err != nil {
		t.Errorf("install.ps1: %v", err)
	}
	for _, bad := range []string{"function F { if ($x) { }", "$a = 'x", "$b = \"$(Q $x\"", "@\"\nno end\n", "x )"} {
		if psStructure(bad) == nil {
			t.Errorf("psStructure accepted %q", bad)
		}
	}
	// PowerShell 5.1 has none of these PowerShell 7 operators.
	for _, op := range []string{" ?? ", " ?. ", " && ", " || ", "-Parallel"} {
		if strings.Contains(string(b), op) {
			t.Errorf("install.ps1 uses %q, which Windows PowerShell 5.1 lacks", strings.TrimSpace(op))
		}
	}
}

// install.ps1 cannot run here: it is a thin wrapper over myriarch-updater
// setup (tested on Linux and under Wine). Check that it hands every one of
// its flags to setup under a flag setup has, the token through a file,
// fetches the four artifacts, and checks the updater's own signature
// before running it.
func TestPowerShellRunsTheUpdatersSetup(t *testing.T) {
	b, err := os.ReadFile("install.ps1")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	out, err := exec.Command("go", "run", "../cmd/myriarch-updater", "setup", "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("myriarch-updater setup -h: %v\n%s", err, out)
	}
	setupFlags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z-]+)`).FindAllStringSubmatch(string(out), -1) {
		setupFlags["--"+m[1]] = true
	}
	if len(setupFlags) < 20 {
		t.Fatalf("setup -h lists only %v", setupFlags)
	}
	mapped := map[string]string{}
	for _, m := range regexp.MustCompile(`(\w+) = '(--[a-z-]+)'`).FindAllStringSubmatch(src, -1) {
		mapped[m[1]] = m[2]
	}
	// Handled by name: the token goes through a file, the artifacts are the
	// work directory the script fetched them into.
	byName := map[string]string{"token": "'--token-file'", "token-file": "'--token-file'", "artifacts": "'--artifacts'",
		"no-start": "'--no-start'", "dry-run": "'--dry-run'", "uninstall": "'--uninstall'", "purge": "'--purge'"}
	for _, f := range ps1Flags(t) {
		name := strings.TrimPrefix(f.name, "--")
		if name == "help" {
			continue
		}
		if lit, ok := byName[name]; ok {
			if !strings.Contains(src, lit) || !setupFlags[strings.Trim(lit, "'")] {
				t.Errorf("-%s: install.ps1 does not hand it to setup as %s", name, lit)
			}
			continue
		}
		pascal := ""
		for _, part := range strings.Split(name, "-") {
			pascal += strings.ToUpper(part[:1]) + part[1:]
		}
		if to, ok := mapped[pascal]; !ok || to != f.name || !setupFlags[to] {
			t.Errorf("-%s: handed to setup as %q (setup has it: %v)", pascal, to, setupFlags[to])
		}
	}
	if strings.Contains(src, "'--token'") {
		t.Error("install.ps1 puts the token on a command line")
	}
	for _, want := range []string{`"myriarch-updater_windows_$Arch.exe"`, `"myriarch-sigstore_windows_$Arch.exe"`,
		`"opampsupervisor_windows_$Arch.exe"`, `_windows_$Arch.zip"`} {
		if !strings.Contains(src, want) {
			t.Errorf("install.ps1 does not fetch %s", want)
		}
	}
	confirm, run := strings.Index(src, "Confirm-Updater $names[0]"), strings.Index(src, "& $upd @f")
	if confirm < 0 || run < 0 || confirm > run {
		t.Error("install.ps1 does not check the updater's signature before running it")
	}
}
