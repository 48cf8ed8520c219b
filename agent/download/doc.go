// Package download fetches one package artifact over HTTP(S) to a local
// file while hashing it on the fly, so the caller never reads the file a
// second time and never holds it in memory.
//
// It is written for unattended agents on bad networks: a broken connection
// is resumed with an HTTP Range request, failures are retried a bounded
// number of times with exponential backoff and full jitter (never a tight
// loop), a connection that goes silent or drips bytes too slowly is cut, the
// size is capped (checked against Content-Length before the first byte and
// against the byte count while streaming), and the destination file system
// must have at least FreeSpaceFactor × Content-Length free before anything
// is written. Proxies come from the environment (HTTP_PROXY, HTTPS_PROXY,
// NO_PROXY).
package download
