//go:build linux

package install

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A freshly written executable whose write descriptor is still open
// somewhere (a concurrent fork inherited it) is "text file busy" for a
// moment; the version check waits it out instead of failing the install.
func TestRunVersionWaitsOutTextFileBusy(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "otelcol-contrib")
	f, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("#!/bin/sh\necho 'otelcol-contrib version 0.149.0'\n"); err != nil {
		t.Fatal(err)
	}
	// Still open for writing: exec fails with ETXTBSY until it is closed.
	go func() { time.Sleep(150 * time.Millisecond); f.Close() }()
	out, err := RunVersion(context.Background(), exe, []string{"--version"}, 10*time.Second)
	if err != nil {
		t.Fatalf("RunVersion: %v", err)
	}
	if err := CheckVersion(out, "0.149.0"); err != nil {
		t.Fatal(err)
	}
}
