package sitesetup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myriarch/myriarch/internal/keyring/keyringtest"
	"github.com/myriarch/myriarch/internal/testenv"
)

// goodSettings are settings that validate, under a prefix in a temporary
// directory.
func goodSettings(t *testing.T) Settings {
	t.Helper()
	dir := t.TempDir()
	arts := filepath.Join(dir, "artifacts")
	if err := os.Mkdir(arts, 0o755); err != nil {
		t.Fatal(err)
	}
	return Settings{Server: "wss://fleet.example.com:4320", Token: "tok.en-1", SiteID: "ams-01", SiteType: "store",
		SiteName: "Amsterdam Centraal", SiteCountry: "NL", SiteRegion: "Noord-Holland", SiteTimezone: "Europe/Amsterdam",
		Environment: "production", Mode: "binary", CollectorVersion: "v0.149.0", Artifacts: arts,
		MinisignKey: keyringtest.NewKey(t).Text, Root: filepath.Join(dir, "root"), NoStart: true}
}

// Every bad setting is named with its flag, all of them in one report.
func TestValidateNamesEveryProblem(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "k.pub")
	key := keyringtest.NewKey(t)
	if err := os.WriteFile(keyFile, []byte("untrusted comment: minisign public key\n"+key.Text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(s *Settings)
		want []string
	}{
		{"good", func(*Settings) {}, nil},
		{"key file", func(s *Settings) { s.MinisignKey, s.RootKey = keyFile, keyFile }, nil},
		{"container", func(s *Settings) { s.Mode, s.CollectorVersion = "container", "" }, nil},
		{"server scheme", func(s *Settings) { s.Server = "ftp://x" }, []string{`--server "ftp://x": must be a ws://, wss://, http:// or https:// URL`}},
		{"server quote", func(s *Settings) { s.Server = `wss://x"` }, []string{"--server", "must not contain spaces, quotes"}},
		{"no host", func(s *Settings) { s.Server = "wss://" }, []string{`--server "wss://": has no host`}},
		{"token chars", func(s *Settings) { s.Token = "a b" }, []string{"token: contains characters not allowed"}},
		{"both tokens", func(s *Settings) { s.TokenFile = keyFile }, []string{"--token and --token-file: give only one of them"}},
		{"no token", func(s *Settings) { s.Token = "" }, []string{"--token or --token-file is required"}},
		{"site type case", func(s *Settings) { s.SiteType = "Store" }, []string{`--site-type "Store": must be lower case (store)`}},
		{"dollar", func(s *Settings) { s.SiteName = "a ${env:X}" }, []string{`--site-name "a ${env:X}": must not contain $`}},
		{"control", func(s *Settings) { s.SiteRegion = "a\nb" }, []string{"--site-region: must be one line"}},
		{"long", func(s *Settings) { s.SiteID = strings.Repeat("x", 257) }, []string{"--site-id: longer than 256 characters"}},
		{"country case", func(s *Settings) { s.SiteCountry = "nl" }, []string{`--site-country "nl": must be upper case (NL)`}},
		{"country code", func(s *Settings) { s.SiteCountry = "XX" }, []string{`--site-country "XX": not an ISO 3166-1 alpha-2 country code`}},
		{"country form", func(s *Settings) { s.SiteCountry = "NLD" }, []string{"must be an ISO 3166-1 alpha-2 code"}},
		{"zone", func(s *Settings) { s.SiteTimezone = "W. Europe Standard Time" }, []string{"not an IANA time zone"}},
		{"version", func(s *Settings) { s.CollectorVersion = "latest" }, []string{`--collector-version "latest": must be a version like 0.149.0`}},
		{"mirror url", func(s *Settings) { s.CatalogMirrors = []string{"https://m.example.com"} }, []string{`--catalog-mirrors "https://m.example.com": a host`}},
		{"key", func(s *Settings) { s.MinisignKey = "RWnope" }, []string{"--minisign-key: not a minisign public key"}},
		{"root key", func(s *Settings) { s.RootKey = "/nonexistent.pub" }, []string{"--root-key: not a minisign public key"}},
		{"artifacts", func(s *Settings) { s.Artifacts = "/nonexistent" }, []string{"--artifacts /nonexistent: no such directory"}},
		{"root with start", func(s *Settings) { s.NoStart = false }, []string{"--root needs --no-start"}},
		{"mode", func(s *Settings) { s.Mode = "k8s" }, []string{`--mode "k8s": must be binary or container`}},
		{"everything missing", func(s *Settings) { *s = Settings{Mode: "binary", NoStart: true} }, []string{
			"--server is required", "--token or --token-file is required", "--site-id is required", "--site-type is required",
			"--site-country is required", "--site-timezone is required", "--environment is required",
			"--collector-version is required in binary mode", "--artifacts is required", "--minisign-key is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := goodSettings(t)
			tc.edit(&s)
			err := s.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			if n := len(strings.Split(err.Error(), "\n")); n != len(tc.want) && tc.name == "everything missing" {
				t.Errorf("%d problems, want %d: %v", n, len(tc.want), err)
			}
		})
	}
}

// The country list is exactly tzdata's iso3166.tab; every zone is one Go
// knows and every canonical zone of tzdata is there.
func TestCountriesAndZonesAreTzdatas(t *testing.T) {
	tab := testenv.File(t, "/usr/share/zoneinfo/iso3166.tab", "tzdata")
	var want []string
	for _, line := range strings.Split(string(tab), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			want = append(want, strings.Fields(line)[0])
		}
	}
	if got := Countries(); !slices.Equal(got, want) {
		t.Errorf("%d countries, tzdata has %d", len(got), len(want))
	}
	zones := Zones()
	if len(zones) < 500 {
		t.Fatalf("only %d zones", len(zones))
	}
	for _, z := range zones {
		if _, err := time.LoadLocation(z); err != nil {
			t.Errorf("zone %q: %v", z, err)
		}
	}
	canon := testenv.File(t, "/usr/share/zoneinfo/zone1970.tab", "tzdata")
	for _, line := range strings.Split(string(canon), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && !strings.HasPrefix(line, "#") && !slices.Contains(zones, f[2]) {
			t.Errorf("no zone %s", f[2])
		}
	}
}
