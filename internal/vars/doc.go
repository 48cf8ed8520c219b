// Package vars is the ${…} variable-substitution engine: it parses templates,
// evaluates them against provider data (one context set plus one set per
// dynamic mapping) and renders documents whose inputs multiply per mapping.
//
// The syntax differs from Elastic Agent's on purpose in a few places:
//
//   - ${BODY} is a reference, $${BODY} renders as the literal ${BODY}, and a
//     body with an unquoted ':' is the OpenTelemetry Collector's own syntax and
//     is left verbatim.
//   - BODY is alternatives separated by '|': quoted constants or dotted
//     variable names; the first alternative that yields wins, and existence
//     (not truthiness) is what counts.
//   - A string that is exactly one reference keeps the type of the value.
//
// Parsing is separate from evaluation so a document is fully checked before
// anything is evaluated: a parse error always wins over a missing reference.
package vars
