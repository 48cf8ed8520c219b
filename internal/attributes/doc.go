// Package attributes turns the typed attributes an OpAMP agent reports into
// the flat string map that fleets, waves and templates select on (the rules of
// "The attribute view"). The rules are fixed so that every server, test and
// tool computes the same view from the same report.
package attributes
