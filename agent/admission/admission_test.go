package admission

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/quarantine"
)

func offer(ver string, hash, sig []byte) *protobufs.PackageAvailable {
	return &protobufs.PackageAvailable{
		Type:    protobufs.PackageType_PackageType_Addon,
		Version: ver,
		File:    &protobufs.DownloadableFile{DownloadUrl: "https://127.0.0.1/c.tar.gz", ContentHash: hash, Signature: sig},
	}
}

func TestCheckContentHash(t *testing.T) {
	for _, tc := range []struct {
		hash []byte
		want string
	}{
		{bytes.Repeat([]byte{1}, 32), ""},
		{nil, "got 0 bytes"},
		{[]byte{1, 2}, "file.content_hash must be a 32-byte SHA-256, got 2 bytes"},
		{bytes.Repeat([]byte{1}, 64), "got 64 bytes"},
	} {
		err := CheckContentHash(offer("1.0.0", tc.hash, nil))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrRefused)) {
			t.Errorf("%d-byte hash: %v, want %q", len(tc.hash), err, tc.want)
		}
	}
}

func TestPolicyCheck(t *testing.T) {
	hash := bytes.Repeat([]byte{0xab}, 32)
	sig := []byte("sig")
	strict := Policy{RequireSignature: true}
	for _, tc := range []struct {
		name    string
		pol     Policy
		p       *protobufs.PackageAvailable
		running string
		want    string
	}{
		{"ok", strict, offer("1.3.0", hash, sig), "1.2.0", ""},
		{"nothing running", strict, offer("0.1.0", hash, sig), "", ""},
		{"unparsable running never blocks", strict, offer("0.1.0", hash, sig), "weird", ""},
		{"same version", strict, offer("1.2.0", hash, sig), "1.2.0", ""},
		{"v prefix", strict, offer("v1.3.0", hash, sig), "1.2.0", ""},
		{"unparsable", strict, offer("one", hash, sig), "", `unparsable version "one"`},
		{"unsafe characters", strict, offer("1.0.0/../x", hash, sig), "", "unparsable version"},
		{"empty", strict, offer("", hash, sig), "", "unparsable version"},
		{"unsigned", strict, offer("1.3.0", hash, nil), "", "unsigned package: trust.require_signature is set"},
		{"unsigned allowed", Policy{}, offer("1.3.0", hash, nil), "", ""},
		{"downgrade", strict, offer("1.1.0", hash, sig), "1.2.0", "downgrade from 1.2.0 to 1.1.0 refused (trust.allow_downgrade is false): " +
			"this host has confirmed no version healthy yet; it may go back only to a version it confirmed"},
		{"downgrade allowed", Policy{RequireSignature: true, AllowDowngrade: true}, offer("1.1.0", hash, sig), "1.2.0", ""},
		{"back to a confirmed version", withConfirmed("1.1.0", "1.2.0"), offer("1.1.0", hash, sig), "1.2.0", ""},
		{"back to a confirmed version, spelled with v", withConfirmed("v1.1.0"), offer("1.1.0", hash, sig), "1.2.0", ""},
		{"back to a confirmed version, other build metadata", withConfirmed("1.1.0+build.7"), offer("1.1.0+build.9", hash, sig), "1.2.0", ""},
		{"back to a confirmed version two steps down", withConfirmed("1.0.0", "1.1.0", "1.2.0"), offer("1.0.0", hash, sig), "1.2.0", ""},
		{"older than every confirmed version", withConfirmed("1.2.0", "1.1.0", "weird"), offer("1.0.0", hash, sig), "1.2.0",
			"downgrade from 1.2.0 to 1.0.0 refused (trust.allow_downgrade is false): this host may go back only to a version it confirmed healthy: 1.1.0, 1.2.0, weird"},
		{"between confirmed versions", withConfirmed("1.0.0", "1.2.0"), offer("1.1.0", hash, sig), "1.2.0",
			"it confirmed healthy: 1.0.0, 1.2.0"},
		{"a prerelease of a confirmed version", withConfirmed("1.1.0"), offer("1.1.0-rc.1", hash, sig), "1.2.0", "it confirmed healthy: 1.1.0"},
		{"a confirmed version is still signed", withConfirmed("1.1.0"), offer("1.1.0", hash, nil), "1.2.0", "unsigned package"},
		{"a confirmed upgrade is an upgrade", withConfirmed(), offer("1.3.0", hash, sig), "1.2.0", ""},
	} {
		err := tc.pol.Check(tc.p, tc.running)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrRefused)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// withConfirmed is the strict policy of a host that confirmed versions.
func withConfirmed(versions ...string) Policy {
	return Policy{RequireSignature: true, Confirmed: versions}
}

// A confirmed version with a hash that failed since is still refused.
func TestConfirmedVersionQuarantined(t *testing.T) {
	q := quarantine.New(filepath.Join(t.TempDir(), "q.json"), time.Hour, nil)
	p := offer("1.1.0", bytes.Repeat([]byte{0xab}, 32), nil)
	if err := q.Record(HexHash(p), "1.1.0", "health gate", false); err != nil {
		t.Fatal(err)
	}
	err := Policy{Confirmed: []string{"1.1.0"}, Quarantine: q}.Check(p, "1.2.0")
	if !errors.Is(err, quarantine.ErrPreviouslyFailed) {
		t.Errorf("quarantined hash of a confirmed version: %v", err)
	}
}

func TestPolicyQuarantine(t *testing.T) {
	q := quarantine.New(filepath.Join(t.TempDir(), "q.json"), time.Hour, nil)
	pol := Policy{Quarantine: q}
	p := offer("1.3.0", bytes.Repeat([]byte{0xab}, 32), nil)
	if err := pol.Check(p, ""); err != nil {
		t.Fatal(err)
	}
	if err := q.Record(HexHash(p), "1.3.0", "health gate", false); err != nil {
		t.Fatal(err)
	}
	err := pol.Check(p, "")
	if !errors.Is(err, ErrRefused) || !errors.Is(err, quarantine.ErrPreviouslyFailed) ||
		!strings.HasPrefix(err.Error(), "offer refused by local policy: previously failed: version 1.3.0 with this hash failed at ") {
		t.Errorf("quarantined: %v", err)
	}
	other := offer("1.3.0", bytes.Repeat([]byte{0xcd}, 32), nil)
	if err := pol.Check(other, ""); err != nil {
		t.Errorf("other hash: %v", err)
	}
	if !SameHash(p, offer("9.9.9", bytes.Repeat([]byte{0xab}, 32), nil)) || SameHash(p, other) {
		t.Error("SameHash")
	}
	if HexHash(p) != strings.Repeat("ab", 32) {
		t.Errorf("HexHash %s", HexHash(p))
	}
}
