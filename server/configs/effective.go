package configs

import (
	"sort"
	"strings"

	"github.com/open-telemetry/opamp-go/protobufs"
	yaml "go.yaml.in/yaml/v3"
)

// Whether the collector runs the configuration it reports APPLIED.
//
// The Supervisor (v0.149) can report APPLIED for a remote configuration and
// still run the collector without it: a configuration that arrives while
// it starts is overwritten by its start-up composition. The effective
// configuration comes from the collector itself (its opamp extension), so
// the engine checks it holds every component and pipeline the desired
// configuration defines; when it does not, the configuration is pending,
// not in sync, and is sent again.

// definedIDs lists what a collector configuration defines: "<section>/<id>"
// for components and "pipelines/<name>" for pipelines, sorted. ok is false
// when body is not a YAML mapping.
func definedIDs(body []byte) (ids []string, ok bool) {
	var doc struct {
		Receivers  map[string]yaml.Node `yaml:"receivers"`
		Processors map[string]yaml.Node `yaml:"processors"`
		Exporters  map[string]yaml.Node `yaml:"exporters"`
		Connectors map[string]yaml.Node `yaml:"connectors"`
		Extensions map[string]yaml.Node `yaml:"extensions"`
		Service    struct {
			Pipelines map[string]yaml.Node `yaml:"pipelines"`
		} `yaml:"service"`
	}
	if yaml.Unmarshal(body, &doc) != nil {
		return nil, false
	}
	for _, sec := range []struct {
		name string
		m    map[string]yaml.Node
	}{{"receivers", doc.Receivers}, {"processors", doc.Processors}, {"exporters", doc.Exporters},
		{"connectors", doc.Connectors}, {"extensions", doc.Extensions}, {"pipelines", doc.Service.Pipelines}} {
		for id := range sec.m {
			ids = append(ids, sec.name+"/"+id)
		}
	}
	sort.Strings(ids)
	return ids, true
}

// missingFrom returns the ids of the desired body the effective
// configuration lacks (nil when it has them all or cannot be read).
// Caller holds e.mu.
func (e *Engine) missingFrom(ec *protobufs.AgentConfigMap, desired string) []string {
	want, ok := e.definedByBody[desired]
	if !ok {
		want, ok = definedIDs(e.bodies[desired])
		if !ok {
			return nil
		}
		e.definedByBody[desired] = want
	}
	var body []byte
	for _, f := range ec.GetConfigMap() {
		body = append(body, f.GetBody()...)
		body = append(body, '\n')
	}
	have, ok := definedIDs(body)
	if !ok {
		return nil
	}
	var missing []string
	for _, id := range want {
		if _, found := sort.Find(len(have), func(i int) int { return strings.Compare(id, have[i]) }); !found {
			missing = append(missing, id)
		}
	}
	return missing
}
