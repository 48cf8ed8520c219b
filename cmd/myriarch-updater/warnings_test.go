package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestValidateWarns: a configuration under which every offer is refused is
// valid, and validate says what it will do.
func TestValidateWarns(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "updater.yaml")
	body := "server:\n  endpoint: ws://127.0.0.1:4320/v1/opamp\n  token_file: " + filepath.Join(dir, "token") +
		"\nstate_dir: " + filepath.Join(dir, "state") + "\n"
	os.WriteFile(filepath.Join(dir, "token"), []byte("t\n"), 0o600)
	os.WriteFile(cfg, []byte(body), 0o600)
	code, stdout, stderr := runCmd(t, "validate", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "valid") ||
		!strings.Contains(stdout, "warning: trust: require_signature is true and trust.minisign_public_keys is empty: every package offer will be refused") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}

// validate warns when the last signing key expires within 30 days.
func TestValidateWarnsOfExpiringKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "updater.yaml")
	soon := time.Now().Add(10 * 24 * time.Hour).UTC().Format(time.RFC3339)
	body := "server:\n  endpoint: ws://127.0.0.1:4320/v1/opamp\n  token_file: " + filepath.Join(dir, "token") +
		"\nstate_dir: " + filepath.Join(dir, "state") + "\ntrust:\n  minisign_keys:\n    - {key: RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3, not_after: " + soon + "}\n"
	os.WriteFile(filepath.Join(dir, "token"), []byte("t\n"), 0o600)
	os.WriteFile(cfg, []byte(body), 0o600)
	code, stdout, stderr := runCmd(t, "validate", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "warning: trust.minisign_keys: the last key expires on "+soon+", within 30 days") ||
		strings.Contains(stdout, "minisign_public_keys is empty") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}
