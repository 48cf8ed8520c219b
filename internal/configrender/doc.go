// Package configrender renders a Blueprint for one collector: the
// Blueprint's plan (internal/blueprint) with every ${…} in its
// Components' configuration substituted from the collector's context
// (internal/vars). myriarchd sends what it renders as remote
// configuration, and telecraft render --context prints the same bytes.
//
// The rules, applied per placed Component:
//
//   - A context is flat: the variable ${a.b.c} is the context entry
//     "a.b.c" (provider a, key b.c), as attribute views are keyed.
//     Alternatives (${a|b|'const'}) are tried in order; OpenTelemetry's own
//     references (${env:X}, ${file:…}: a provider part followed by ':') and
//     escaped ones ($${…}) pass through as internal/vars defines.
//   - A receiver that references a variable missing from the context is
//     dropped, and a pipeline left without receivers (or, once connectors
//     lose a side, without exporters) is dropped with it; Components no
//     remaining pipeline uses are left out. The same in a processor,
//     exporter, connector or extension is a render error.
//   - Substituted values are YAML scalars and can never add structure: a
//     plain scalar that is exactly one reference takes the value's type
//     when the value is a canonical integer, float or boolean (so a port
//     stays a number while "007" stays a string); every other result is a
//     double-quoted string. Only values are substituted, never keys.
//   - The Supervisor owns the opamp extension: a Blueprint that places an
//     extension of type opamp does not render.
//   - A rendered document is at most MaxBody bytes.
package configrender
