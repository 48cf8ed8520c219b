// Package configs configures collectors from the estate: for every
// collector (and every Bridge whose fleet opts in) it renders the fleet's
// Blueprint with the collector's context, keeps the assigned, desired and
// failed hashes of each collector, moves desired through the fleet's rollout
// waves, sends it as OpAMP remote configuration and tracks what the agent
// reports back, rolling back to the last applied configuration when a new
// one fails.
//
// Hashes are the lower-case hex SHA-256 of the rendered body, which is also
// the AgentRemoteConfig.config_hash sent to the agent. Bodies are stored
// once however many agents share them.
//
// With several instances on one store (Options.Shared) the leading
// instance decides: it renders, moves desired through the waves, counts
// failures and pauses, rolls back, collects bodies. The others take its
// records (Merge) to show them and to send their desired configurations to
// the agents connected to them, and report what those agents say about
// their configuration for it (ReportFeature).
package configs
