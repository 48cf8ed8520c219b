package peerbuild

import (
	"strings"
	"testing"
)

func TestManifestsDifferOnlyWhereIntended(t *testing.T) {
	const opamp = "extension/opampextension v0.149.0"
	tests := []struct {
		spec      collectorSpec
		wantOpAMP bool
	}{
		{collectorSpec{Version: VersionM1}, true},
		{collectorSpec{Version: VersionM2}, true},
		{collectorSpec{Version: VersionBroken, Broken: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.spec.Version, func(t *testing.T) {
			m, err := renderManifest(tt.spec, "/out")
			if err != nil {
				t.Fatal(err)
			}
			s := string(m)
			for _, want := range []string{
				"version: " + tt.spec.Version + "\n",
				"name: " + CollectorExecutable + "\n",
				"output_path: /out\n",
				"receiver/otlpreceiver v0.149.0",
				"processor/batchprocessor v0.149.0",
				"processor/memorylimiterprocessor v0.149.0",
				"exporter/debugexporter v0.149.0",
				"receiver/nopreceiver v0.149.0",
				"exporter/nopexporter v0.149.0",
				"extension/healthcheckextension v0.149.0",
				"provider/envprovider v1.55.0",
				"provider/fileprovider v1.55.0",
				"provider/yamlprovider v1.55.0",
			} {
				if !strings.Contains(s, want) {
					t.Errorf("manifest lacks %q:\n%s", want, s)
				}
			}
			if got := strings.Contains(s, opamp); got != tt.wantOpAMP {
				t.Errorf("manifest has opamp extension = %t, want %t:\n%s", got, tt.wantOpAMP, s)
			}
		})
	}
}

func TestInputsHash(t *testing.T) {
	base := defaultInputs("go1.26.8")
	h0, err := base.hash()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := defaultInputs("go1.26.8").hash(); again != h0 {
		t.Fatalf("hash not stable: %s then %s", h0, again)
	}
	if len(h0) != 16 {
		t.Fatalf("hash %q: want 16 hex digits", h0)
	}
	reordered := base
	reordered.Specs = []collectorSpec{base.Specs[2], base.Specs[0], base.Specs[1]}
	if h, _ := reordered.hash(); h != h0 {
		t.Errorf("hash depends on spec order: %s vs %s", h, h0)
	}

	changes := map[string]func(*inputs){
		"go version":      func(in *inputs) { in.GoVersion = "go1.27.0" },
		"goarch":          func(in *inputs) { in.GOARCH = "arm64" },
		"goos":            func(in *inputs) { in.GOOS = "windows" },
		"collector label": func(in *inputs) { in.Specs[1].Version = "0.149.0-m.9" },
		"broken flag":     func(in *inputs) { in.Specs[0].Broken = true },
		"extra collector": func(in *inputs) { in.Specs = append(in.Specs, collectorSpec{Version: "0.149.0-m.4"}) },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			in := defaultInputs("go1.26.8")
			change(&in)
			h, err := in.hash()
			if err != nil {
				t.Fatal(err)
			}
			if h == h0 {
				t.Errorf("changing the %s kept hash %s", name, h)
			}
		})
	}
}

func TestArchiveName(t *testing.T) {
	if got, want := archiveName("0.149.0-m.1", "linux", "amd64"), "otelcol_0.149.0-m.1_linux_amd64.tar.gz"; got != want {
		t.Errorf("archiveName = %q, want %q", got, want)
	}
}

func TestSafeVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"0.149.0-m.1": true, "": false, ".": false, "..": false, "a/b": false, `a\b`: false, "a b": false,
	} {
		if got := safeVersion(v); got != want {
			t.Errorf("safeVersion(%q) = %t, want %t", v, got, want)
		}
	}
}
