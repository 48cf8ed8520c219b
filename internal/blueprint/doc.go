// Package blueprint loads an estate of authored Blueprints, shared
// Components and Requirements, resolves the references between them, judges
// the result into findings and renders a Blueprint to an OpenTelemetry
// Collector configuration.
//
// The pipeline is deliberately split in four steps:
//
//   - [Load] reads every source root strictly and fails closed: any load
//     error anywhere means no [Estate] at all, and every error found is
//     reported (not just the first), each naming its file and, where YAML
//     gives one, its line.
//   - Resolution ties every lane entry to the Component it names; Judge
//     and Render both start with it.
//   - [Estate.Judge] turns problems that cross object boundaries into
//     [Finding]s (reference, ordering, library_drift). Findings never block
//     the load, and one team's findings never stop another team's render.
//   - [Estate.Render] produces collector config for one Blueprint, refusing
//     only that Blueprint when it cannot be rendered faithfully.
//
// Files in a plain block-YAML subset are read by a small parser that builds
// exactly the node tree go-yaml would (fastyaml.go); everything else, and
// every malformed file, goes through go-yaml.
//
// The file format is the Blueprint file format specification.
package blueprint
