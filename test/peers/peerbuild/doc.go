// Package peerbuild builds, caches and packages the real upstream programs the
// end-to-end tests run against: the OpenTelemetry OpAMP Supervisor and several
// versions of an OpenTelemetry Collector built with the collector builder (ocb).
//
// Everything is built outside the repository, in
// $HOME/.cache/myriarch/peers/<hash>/, where the hash covers every input of the
// build (versions, the ocb manifest, the supervisor wrapper module, the Go
// toolchain and the platform). The builds happen in their own Go modules there,
// so the project's go.mod never sees collector or contrib modules. A lock file
// serialises concurrent test processes; the first one builds (minutes, cold),
// the others wait and then reuse the result (seconds, warm).
//
// Three collector versions exist, all built from the same manifest shape:
//
//   - 0.149.0-m.1 and 0.149.0-m.2 work and report their label as
//     service.version (and in --version);
//   - 0.149.0-m.3 is the broken release: it is built without the opamp
//     extension, so "--version" still prints 0.149.0-m.3 (a pre-flight check
//     passes) but it cannot start under the OpAMP Supervisor, whose bootstrap
//     run needs that extension. The supervisor then exits with
//     "could not get bootstrap info from the Collector".
//
// Each collector is also packaged as a release-like archive
// otelcol_<version>_<goos>_<goarch>.tar.gz holding one executable named
// otelcol-myriarch (mode 0755) at the archive root.
package peerbuild
