// Package integration runs myriarch's parts together in one process: the
// real myriarchd server and the real updater agent over loopback.
package integration
