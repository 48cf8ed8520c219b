// Package cluster lets several myriarchd instances share one PostgreSQL
// database and so one estate. Each instance keeps its in-memory registry;
// what one instance writes, the others learn through batched change
// notifications (LISTEN/NOTIFY: agent rows and tokens, never heartbeats)
// and reload from the database. Agents connected to another instance count
// as online while that instance keeps writing their last-seen time (a
// lease): an instance that dies leaves them online only until it expires.
package cluster
