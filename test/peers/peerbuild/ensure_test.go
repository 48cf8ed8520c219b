//go:build linux || darwin || freebsd || netbsd || openbsd

package peerbuild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnsureUsesAFinishedCache checks the warm path: with a complete record
// in the directory named by the inputs' hash, Ensure builds nothing (the
// fake executables would fail any real step) and returns the record.
func TestEnsureUsesAFinishedCache(t *testing.T) {
	ctx := context.Background()
	goBin, err := findGo()
	if err != nil {
		t.Fatal(err)
	}
	gv, err := goTool{goBin: goBin}.output(ctx, "env", "GOVERSION")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := defaultInputs(gv).hash()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, sum)
	want := fakeBuildIn(t, dir)

	got, err := EnsureWith(ctx, nil, Options{CacheRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	if got.Dir != dir || got.Collectors[1].ArchiveSHA256 != want.Collectors[1].ArchiveSHA256 {
		t.Errorf("Ensure returned %+v, want the cached %+v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "build.log")); err == nil {
		t.Error("Ensure started a build despite a complete cache")
	}

	t.Setenv(CacheEnv, root)
	if got, err := Ensure(ctx, nil); err != nil || got.Dir != dir {
		t.Errorf("Ensure with %s=%s: dir %v err %v", CacheEnv, root, got, err)
	}
}

func TestCheckVersion(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := script("good", `echo "otelcol-myriarch version 0.149.0-m.1"`)
	other := script("other", `echo "otelcol-myriarch version 0.149.0-m.2"`)
	failing := script("failing", `echo boom >&2; exit 3`)

	if err := checkVersion(context.Background(), good, VersionM1); err != nil {
		t.Errorf("matching version: %v", err)
	}
	tests := map[string]struct{ exe, want string }{
		"other version": {other, `printed "otelcol-myriarch version 0.149.0-m.2", want "otelcol-myriarch version 0.149.0-m.1"`},
		"exit status":   {failing, "boom"},
		"missing":       {filepath.Join(dir, "missing"), "missing"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkVersion(context.Background(), tt.exe, VersionM1)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
