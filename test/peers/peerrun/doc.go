// Package peerrun runs the peers that peerbuild builds, the way the
// end-to-end tests need them: a supervisor configuration that lets several
// supervisors share one host (loopback only, no collector metrics port), and
// processes in their own process groups that stop with SIGINT (the only
// signal the OpAMP Supervisor v0.149.0 handles cleanly) and whose whole group
// is killed afterwards, so no collector outlives its test.
package peerrun
