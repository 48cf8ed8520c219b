// Package site stands up a myriarch installation from real processes for the
// end-to-end tests and the demo: a myriarchd server process with an estate,
// and a site laid out like the install scripts do (versioned collector
// directory, upstream supervisor config with site.* attributes and the
// enrollment token, updater config in process control) run by a real
// myriarch-updater process. Everything listens on loopback only.
package site
