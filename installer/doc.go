// Package installer holds the site install scripts: install.sh (POSIX sh, Linux) and
// install.ps1 (Windows PowerShell 5.1+). They put the collector, the upstream OpAMP
// Supervisor and myriarch-updater on a host and write the site attribute contract into the
// supervisor configuration. Operators copy the scripts to their hosts (or into their own
// packaging); nothing in myriarch serves them. The tests in this directory run install.sh
// against locally signed artifacts.
package installer
