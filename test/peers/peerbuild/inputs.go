package peerbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"text/template"
)

// Versions of the upstream programs. They are pinned together: ocb refuses to
// mix a newer collector core with these contrib modules.
const (
	// SupervisorVersion is the opampsupervisor module version (the only one the
	// Go module proxy serves).
	SupervisorVersion = "v0.149.0"
	// BuilderVersion is the collector builder (ocb) version.
	BuilderVersion = "v0.149.0"
	// CoreV0Version pins the collector core v0.x modules and contrib modules.
	CoreV0Version = "v0.149.0"
	// CoreV1Version pins the collector core v1.x modules (confmap providers).
	CoreV1Version = "v1.55.0"

	// VersionM1 and VersionM2 are working collectors.
	VersionM1 = "0.149.0-m.1"
	VersionM2 = "0.149.0-m.2"
	// VersionBroken is the broken release: --version works, but it cannot
	// start under the supervisor (no opamp extension).
	VersionBroken = "0.149.0-m.3"

	// CollectorExecutable is the collector's executable name, both in the
	// cache and inside every archive (with ".exe" for Windows: ExeName).
	CollectorExecutable = "otelcol-myriarch"
	// SupervisorExecutable is the supervisor's executable name in the cache
	// (with ".exe" for Windows).
	SupervisorExecutable = "opampsupervisor"

	supervisorPackage = "github.com/open-telemetry/opentelemetry-collector-contrib/cmd/opampsupervisor"
	builderPackage    = "go.opentelemetry.io/collector/cmd/builder"

	// recipeRevision changes whenever the way peers are built or laid out
	// changes in a way the other inputs do not capture.
	recipeRevision = "3"
)

// collectorSpec describes one collector version to build.
type collectorSpec struct {
	Version string
	// Broken collectors are built without the opamp extension.
	Broken bool
}

// collectorSpecs lists every collector the peers contain, in order.
func collectorSpecs() []collectorSpec {
	return []collectorSpec{
		{Version: VersionM1},
		{Version: VersionM2},
		{Version: VersionBroken, Broken: true},
	}
}

// manifestTemplate is the ocb manifest. memory_limiter builds with the 0.149
// line, so it is included. The filelog receiver, resource processor and
// OTLP/HTTP exporter let configuration tests observe data end to end (a
// file in, tagged records out at an endpoint named after the site; the Go
// module proxy does not serve the contrib file exporter at v0.149.0). The nop receiver and exporter are there for the
// supervisor: v0.149.0 reads the collector's `featuregate` output racily
// (its pipes can close before they are read, more often under load); when it
// then misses service.AllowNoPipelines it falls back to a bootstrap config
// with a nop receiver and exporter, which must exist or the bootstrap fails.
var manifestTemplate = template.Must(template.New("manifest").Parse(`dist:
  module: example.com/myriarch/otelcol
  name: {{.Name}}
  description: myriarch test collector {{.Version}}
  output_path: {{.OutputPath}}
  version: {{.Version}}
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver {{.CoreV0}}
  - gomod: go.opentelemetry.io/collector/receiver/nopreceiver {{.CoreV0}}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver {{.CoreV0}}
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor {{.CoreV0}}
  - gomod: go.opentelemetry.io/collector/processor/memorylimiterprocessor {{.CoreV0}}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/processor/resourceprocessor {{.CoreV0}}
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter {{.CoreV0}}
  - gomod: go.opentelemetry.io/collector/exporter/nopexporter {{.CoreV0}}
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter {{.CoreV0}}
extensions:
{{- if not .Broken}}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/extension/opampextension {{.CoreV0}}
{{- end}}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension {{.CoreV0}}
providers:
  - gomod: go.opentelemetry.io/collector/confmap/provider/envprovider {{.CoreV1}}
  - gomod: go.opentelemetry.io/collector/confmap/provider/fileprovider {{.CoreV1}}
  - gomod: go.opentelemetry.io/collector/confmap/provider/yamlprovider {{.CoreV1}}
`))

// renderManifest returns the ocb manifest for spec, writing its output to
// outputPath.
func renderManifest(spec collectorSpec, outputPath string) ([]byte, error) {
	var b bytes.Buffer
	err := manifestTemplate.Execute(&b, map[string]any{
		"Name":       CollectorExecutable,
		"Version":    spec.Version,
		"OutputPath": outputPath,
		"Broken":     spec.Broken,
		"CoreV0":     CoreV0Version,
		"CoreV1":     CoreV1Version,
	})
	if err != nil {
		return nil, fmt.Errorf("render ocb manifest for %s: %w", spec.Version, err)
	}
	return b.Bytes(), nil
}

// inputs are everything a build depends on; their hash names the cache
// directory.
type inputs struct {
	GoVersion string // `go env GOVERSION` of the toolchain that builds
	GOOS      string
	GOARCH    string
	Specs     []collectorSpec
}

func defaultInputs(goVersion string) inputs {
	return inputsFor(goVersion, runtime.GOOS, runtime.GOARCH)
}

// inputsFor are the inputs of peers built for goos/goarch.
func inputsFor(goVersion, goos, goarch string) inputs {
	return inputs{GoVersion: goVersion, GOOS: goos, GOARCH: goarch, Specs: collectorSpecs()}
}

// ExeName is base as an executable of goos is named.
func ExeName(goos, base string) string {
	if goos == "windows" {
		return base + ".exe"
	}
	return base
}

// hash returns a short, stable digest of every build input. Manifests are
// rendered with a placeholder output path so the hash does not depend on
// where the cache lives.
func (in inputs) hash() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "recipe=%s\ngo=%s\nplatform=%s/%s\n", recipeRevision, in.GoVersion, in.GOOS, in.GOARCH)
	fmt.Fprintf(h, "supervisor=%s@%s\nbuilder=%s@%s\n", supervisorPackage, SupervisorVersion, builderPackage, BuilderVersion)
	fmt.Fprintf(h, "executable=%s\nwrapper=%q\nflags=%q\n", CollectorExecutable, supervisorGoMod, supervisorBuildFlags)
	specs := append([]collectorSpec(nil), in.Specs...)
	sort.Slice(specs, func(i, j int) bool { return specs[i].Version < specs[j].Version })
	for _, s := range specs {
		m, err := renderManifest(s, "@OUTPUT@")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "collector=%s broken=%t\n%s\n", s.Version, s.Broken, m)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// archiveName returns the release-like archive name of a collector version.
func archiveName(version, goos, goarch string) string {
	return fmt.Sprintf("otelcol_%s_%s_%s.tar.gz", version, goos, goarch)
}

// safeVersion reports whether v can be used as a path element.
func safeVersion(v string) bool {
	return v != "" && !strings.ContainsAny(v, `/\ `) && v != "." && v != ".."
}
