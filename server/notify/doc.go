// Package notify tells webhooks what happens in the estate: each body is
// JSON, signed with the webhook's secret so a receiver can check it came
// from this myriarchd and was not replayed.
//
// # Signatures
//
// Every request carries two headers:
//
//	X-Myriarch-Timestamp: 1796636312
//	X-Myriarch-Signature: sha256=5d41402abc4b2a76b9719d911017c592...
//
// The signature is the hex HMAC-SHA256, keyed with the webhook's secret,
// of the timestamp's decimal digits, a full stop, and the body's bytes as
// sent. A receiver recomputes it over the raw body before parsing it,
// compares in constant time, and refuses a timestamp more than
// ReplayWindow (5 minutes) from its own clock; within the window it may
// remember the signatures it accepted and refuse one seen twice. A retry
// is signed again with its own timestamp, so a delivery retried for hours
// stays inside every receiver's window.
package notify
