// Package registry is myriarchd's in-memory agent registry: identity bindings,
// descriptions, kinds, the attribute view, labels and event history. It is the
// source of truth while the server runs and writes behind to a store.Agents,
// batching and coalescing so a heartbeat never costs a database write.
package registry
