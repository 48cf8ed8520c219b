// Package cluster lets several myriarchd instances share one store (the
// PostgreSQL one, store.Shared) and so one estate. Each instance keeps its
// in-memory registry; what one instance writes, the others learn through
// the store's batched change notifications (agent rows and tokens, never
// heartbeats) and reload from the store; one instance, holding the store's
// lead, writes the decisions. Agents connected to another instance count
// as online while that instance keeps writing their last-seen time (a
// lease): an instance that dies leaves them online only until it expires.
package cluster
