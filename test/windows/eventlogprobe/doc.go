// Command eventlogprobe reads the Windows Application event log for the
// Windows tests under Wine (test/windows); it is built for Windows only.
package main
