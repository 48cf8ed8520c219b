// Package testkit holds the small helpers the tests of many packages share:
// polling an observable condition with a deadline, and building OpAMP
// key-values. It is imported by tests only.
package testkit
