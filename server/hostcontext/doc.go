// Package hostcontext keeps what each myriarch-updater reports of its
// host's providers of variable substitution — context providers such as host, agent and
// local, and dynamic ones such as docker — so that the configuration of
// the collector it is linked to can follow the host.
//
// An updater sends its providers as an OpAMP custom message: capability
// dev.myriarch.providers, type "snapshot", data a JSON document
//
//	{"context": {provider: {key: value, …}},
//	 "dynamic": {provider: [{"id": …, "mapping": {…}, "processors": […]}]},
//	 "seq": n, "truncated": {…}}
//
// on connect and whenever the data changes. The server keeps the newest
// snapshot of every updater (persisted with the updater), flattened to the
// variable names renders read ("host.name", "docker.container.name"). A
// snapshot is bounded like an attribute view: at most MaxSnapshot bytes,
// MaxMappings mappings per provider, 256 keys per provider or mapping,
// keys and values cut at 4096 bytes; what is cut is counted in an event on
// the updater. A snapshot from an agent that is not an updater, malformed
// JSON, or one over MaxSnapshot changes nothing but an event. Snapshots
// are applied at most once per second per updater; the newest waiting one
// wins.
//
// Provider data is self-reported, like attributes: it feeds
// ${…} values only, never fleet selection, labels or pairing.
package hostcontext
