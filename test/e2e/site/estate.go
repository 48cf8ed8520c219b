package site

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"aead.dev/minisign"

	"github.com/myriarch/myriarch/test/peers/peerbuild"
)

// Publish signs a collector's release archive with key and adds it to the
// estate's catalog as PackageName at the collector's version.
func Publish(estate string, c peerbuild.Collector, key minisign.PrivateKey) error {
	art, err := c.PublishSigned(filepath.Join(estate, "artifacts"), key)
	if err != nil {
		return err
	}
	dir := filepath.Join(estate, "packages", PackageName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rel := filepath.ToSlash(filepath.Join("artifacts", filepath.Base(art.Path)))
	y := fmt.Sprintf(`name: %s
version: %s
artifacts:
  - os: linux
    arch: amd64
    file: %s
    sha256: %s
    executable: %s
    signature: |
%s`, PackageName, c.Version, rel, art.SHA256, peerbuild.CollectorExecutable, indent(string(art.Signature), "      "))
	return os.WriteFile(filepath.Join(dir, c.Version+".yaml"), []byte(y), 0o644)
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// SetFleet writes fleets/<name>.yaml targeting version for agents matching
// selector; extra is appended verbatim (e.g. a config: block).
func SetFleet(estate, name, version string, selector map[string]string, extra ...string) error {
	dir := filepath.Join(estate, "fleets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keys := make([]string, 0, len(selector))
	for k := range selector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sel []string
	for _, k := range keys {
		sel = append(sel, fmt.Sprintf("%q: %q", k, selector[k]))
	}
	y := fmt.Sprintf("name: %s\npriority: 10\nselector: {%s}\npackage: %s\ntargetVersion: %s\n%s",
		name, strings.Join(sel, ", "), PackageName, version, strings.Join(extra, ""))
	return os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(y), 0o644)
}

// WriteFile writes one estate file (rel is slash-separated), creating its directory.
func WriteFile(estate, rel, content string) error {
	p := filepath.Join(estate, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}
