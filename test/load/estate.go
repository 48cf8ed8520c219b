//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

const packageName = "otelcol-contrib"

// writeEstate lays out an estate with one fleet (every simulated host has
// site.type=edge) and catalog entries for both versions. The artifact URLs
// are never fetched: the simulated updaters only report statuses.
func writeEstate(dir string, versions []string, target string) error {
	for _, v := range versions {
		pd := filepath.Join(dir, "packages", packageName)
		if err := os.MkdirAll(pd, 0o755); err != nil {
			return err
		}
		sum := sha256.Sum256([]byte(v))
		y := fmt.Sprintf("name: %s\nversion: %s\nartifacts:\n  - {os: linux, arch: amd64, url: \"http://127.0.0.1:9/%s_%s_linux_amd64.tar.gz\", sha256: %s, executable: otelcol-contrib}\n",
			packageName, v, packageName, v, hex.EncodeToString(sum[:]))
		if err := os.WriteFile(filepath.Join(pd, v+".yaml"), []byte(y), 0o644); err != nil {
			return err
		}
	}
	return setTarget(dir, target)
}

func setTarget(dir, target string) error {
	fd := filepath.Join(dir, "fleets")
	if err := os.MkdirAll(fd, 0o755); err != nil {
		return err
	}
	y := fmt.Sprintf("name: edge\npriority: 10\nselector: {site.type: edge}\npackage: %s\ntargetVersion: %s\n", packageName, target)
	return os.WriteFile(filepath.Join(fd, "edge.yaml"), []byte(y), 0o644)
}
