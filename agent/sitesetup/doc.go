// Package sitesetup sets up a Windows host as a myriarch site: what
// `myriarch-updater setup` does for installer/install.ps1, which only
// fetches the updater, checks its signature and runs it. From the site's
// settings (the script's flags) it checks every setting, then the
// artifacts (SHA-256 and minisign signature of each, the collector's
// archive unpacked safely and asked for its version), and only then
// changes the host: the versioned collector layout with "current" switched
// as a directory junction, the Supervisor, the updater and its Sigstore
// verifier, their configurations (the token and the Supervisor's
// configuration readable by SYSTEM and Administrators only), and the two
// services, restarted only when their files changed. Re-running with the
// same settings changes nothing; --dry-run says what would change.
//
// Everything but the service manager and the access lists is the same on
// every OS, so the tests run it on Linux under a prefix (--root with
// --no-start) and under Wine as on Windows.
package sitesetup
