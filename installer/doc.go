// Package installer holds the site install scripts: install.sh (POSIX sh, Linux) and
// install.ps1 (Windows PowerShell 5.1+). They put the collector, the upstream OpAMP
// Supervisor and myriarch-updater on a host and write the site attribute contract into the
// supervisor configuration. The scripts are embedded so that a server can hand them out;
// the tests in this directory run install.sh against locally signed artifacts.
package installer

import _ "embed"

// InstallSh is installer/install.sh, byte for byte.
//
//go:embed install.sh
var InstallSh []byte

// InstallPS1 is installer/install.ps1, byte for byte.
//
//go:embed install.ps1
var InstallPS1 []byte
