// Package testenv is what tests use to demand the tools and services they run
// against: a CLI on PATH, a file of a system package, root, a Docker engine.
// A missing one fails the test with the one command that provides it; it never
// skips, so a check cannot silently disappear on a machine that lacks a tool.
// `bash test/setup.sh` (run by `make test`) installs all of them.
package testenv
