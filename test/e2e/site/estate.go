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

// gatewayBlueprint receives OTLP/HTTP on the collector's own address and
// exports it to a sink under the site's id: the data shows the site's
// configuration reached the collector. The exporter type is a parameter so
// a revision can name one the collector does not have.
const gatewayBlueprint = `name: gateway
version: 1
owner: data-flow-owners
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
    config:
      protocols:
        http:
          endpoint: %s
  - name: batch
    class: processor
    type: batch
    version: 1
    config:
      timeout: 100ms
  - name: out
    class: exporter
    type: %s
    version: 1
    config:
      endpoint: http://%s/sites/${site.id}
      compression: none
pipelines:
  logs:
    - component: in
    - component: batch
    - component: out
`

// GatewayConfig is the config: block of a fleet configured with the
// gateway Blueprint (see WriteGatewayBlueprint).
const GatewayConfig = "config:\n  blueprint: data-flow/gateway\n"

// WriteGatewayBlueprint writes the Blueprint data-flow/gateway: an
// OTLP/HTTP receiver on otlpAddr, exported with exporterType (otlphttp) to
// the sink at sinkAddr under /sites/${site.id}.
func WriteGatewayBlueprint(estate, otlpAddr, exporterType, sinkAddr string) error {
	return WriteFile(estate, "teams/data-flow/blueprints/gateway.yaml", fmt.Sprintf(gatewayBlueprint, otlpAddr, exporterType, sinkAddr))
}
