package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/myriarch/myriarch/agent/verify/sigstoretest"
)

const releases = "https://github.com/open-telemetry/opentelemetry-collector-releases/.github/workflows/base-release.yaml@refs/tags/v0.149.0"

// trust.sigstore loads into the install engine's policy: the identity,
// the issuer, the defaults that require a log entry and an SCT, a trusted
// root read from its file.
func TestSigstoreLoads(t *testing.T) {
	dir := t.TempDir()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	rootFile := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(rootFile, sigstoretest.Root(t, vs), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		yaml              string
		tlogless, sctless bool
		root              bool
	}{
		{"  sigstore:\n    identity: " + releases + "\n    issuer: https://token.actions.githubusercontent.com\n", false, false, false},
		{"  sigstore:\n    identity_regexp: ^https://github\\.com/open-telemetry/.*$\n    issuer: https://token.actions.githubusercontent.com\n" +
			"    trusted_root_file: " + rootFile + "\n    require_tlog: false\n    require_sct: false\n", true, true, true},
	} {
		path := filepath.Join(dir, "updater.yaml")
		if err := os.WriteFile(path, []byte(minimal+"trust:\n"+tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		p := cfg.Trust.SigstorePolicy()
		if p == nil || p.WithoutTlog != tc.tlogless || p.WithoutSCT != tc.sctless || (p.TrustedRootFile != "") != tc.root {
			t.Fatalf("%s: %+v", tc.yaml, p)
		}
		// The helper is not beside the test binary; the test CA's root lives
		// an hour: those, and only those, are warned of.
		w := Warnings(path, cfg)
		want := 1
		if tc.root {
			want = 2
		}
		if len(w) != want || !strings.Contains(w[len(w)-1], "trust.sigstore: the verifier myriarch-sigstore is not installed") ||
			tc.root && !strings.Contains(w[0], "within 30 days") {
			t.Errorf("warnings %q", w)
		}
	}
}

func TestBadSigstore(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte(`{"mediaType": "nope"}`), 0o644)
	for _, tc := range []struct{ yaml, want string }{
		{"  sigstore: {issuer: x}\n", "trust.sigstore.identity: required (or identity_regexp)"},
		{"  sigstore: {identity: x}\n", "trust.sigstore.issuer: required (or issuer_regexp)"},
		{"  sigstore: {identity_regexp: \"(\", issuer: x}\n", "trust.sigstore.identity_regexp (line 5): not a regular expression"},
		{"  sigstore: {identity: x, issuer: x, trusted_root_file: " + filepath.Join(dir, "nope.json") + "}\n", "trust.sigstore.trusted_root_file (line 5): open"},
		{"  sigstore: {identity: x, issuer: x, trusted_root_file: " + garbage + "}\n", "trust.sigstore.trusted_root_file (line 5): sigstore trusted root"},
		{"  sigstore: {identity: x, issuer: x, require_tlog: maybe}\n", "trust.sigstore.require_tlog (line 5): invalid value \"maybe\""},
	} {
		path := filepath.Join(dir, "updater.yaml")
		os.WriteFile(path, []byte(minimal+"trust:\n"+tc.yaml), 0o600)
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// A trusted root whose certificate authorities end within 30 days is
// warned about.
func TestSigstoreRootExpiring(t *testing.T) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(sigstoretest.Root(t, vs), &doc); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(10 * 24 * time.Hour).UTC().Truncate(time.Second)
	for _, c := range doc["certificateAuthorities"].([]any) {
		c.(map[string]any)["validFor"] = map[string]any{"start": "2020-01-01T00:00:00Z", "end": end.Format(time.RFC3339)}
	}
	data, _ := json.Marshal(doc)
	file := filepath.Join(t.TempDir(), "trusted_root.json")
	os.WriteFile(file, data, 0o644)
	tr := TrustConfig{Sigstore: &SigstoreConfig{Identity: releases, Issuer: "x", TrustedRootFile: file}}
	if w := tr.rootExpiring(time.Now()); !strings.Contains(w, "trust.sigstore: the trusted root's certificate authorities end on "+end.Format(time.RFC3339)+", within 30 days") {
		t.Fatalf("warning %q", w)
	}
	if w := tr.rootExpiring(end.Add(time.Hour)); !strings.Contains(w, "ended on") {
		t.Fatalf("warning %q", w)
	}
}
