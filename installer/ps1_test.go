//go:build linux

package installer_test

import (
	"fmt"
	"os"
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

// install.ps1 cannot run here: check that it handles the Sigstore helper and the root key
// as install.sh does, in the words that do it.
func TestPowerShellInstallsSigstoreHelperAndRootKey(t *testing.T) {
	b, err := os.ReadFile("install.ps1")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for _, want := range []string{
		// The artifact is named, verified with the others and installed beside the updater.
		"  myriarch-sigstore_windows_<ARCH>.exe ",
		`$sigArt = "myriarch-sigstore_windows_$Arch.exe"`,
		"$sigFile = Confirm-Artifact $sigArt",
		"$SigExe = Join-Path $BinDir 'myriarch-sigstore.exe'",
		"Put-File $sigFile $SigExe 'upd' $false",
		`Say "would install $SigExe if it differs from $sigArt"`,
		"$UpdExe, $SigExe, $SupExe, $CollDir)",
		// -RootKey is checked as -MinisignKey is and written as trust.root_keys.
		"[string]$RootKey,",
		"$RootKey = Get-MinisignKey '-RootKey' $RootKey",
		"$MinisignKey = Get-MinisignKey '-MinisignKey' $MinisignKey",
		"if ($RootKey) { $lines += @('  root_keys:', \"    - `\"$RootKey`\"\") }",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("install.ps1 lacks %q", want)
		}
	}
	// Every artifact is verified before the first file is written.
	confirm := strings.Index(src, "Confirm-Artifact $sigArt")
	firstPut := strings.Index(src, "Put-File $")
	if confirm < 0 || firstPut < 0 || confirm > firstPut {
		t.Error("install.ps1 does not verify the Sigstore helper before writing files")
	}
	// The root key stays out of the configuration unless given, as in install.sh.
	rootKeys := strings.Index(src, "'  root_keys:'")
	if rootKeys < strings.Index(src, "'  minisign_public_keys:'") || rootKeys > strings.Index(src, "'  require_signature: true'") {
		t.Error("install.ps1 does not write root_keys between minisign_public_keys and require_signature")
	}
}
