// Package audit is myriarchd's audit trail: one record per state-changing
// or refused request, written before the response, chained by hashes so
// that a record changed, removed or inserted in the database afterwards
// is found by verification (GET /api/v1/audit/verify), and read through
// GET /api/v1/audit, `myriarchd audit` and the console's /audit page.
//
// # Records
//
// A record is {"id", "time", "actor", "role", "via", "action", "target",
// "source", "requestId", "outcome", "detail", "prev", "hash"}. via is one
// of api, console, cli, estate; outcome one of ok, denied, error; role a
// role's name (viewer, operator, admin, none) or empty. Strings are cut
// to their bounds (target 256 bytes, detail 1 KiB; see the Max constants)
// and made valid UTF-8 without NUL (anything else becomes U+FFFD) before
// the record is sealed. Ids are dense, from 1, in the order records were
// appended: the chain's order. Several instances on one PostgreSQL
// database append to one chain.
//
// # Canonical JSON and the hash
//
// A record's canonical JSON is one line of UTF-8 without white space
// between tokens:
//
//	{"id":7,"time":"2025-06-01T12:00:00.000000000Z","actor":"alice","role":"admin","via":"api","action":"token.create","target":"token:edge","source":"192.0.2.7:51234","requestId":"r-1","outcome":"ok","detail":""}
//
// That is:
//
//   - the members id, time, actor, role, via, action, target, source,
//     requestId, outcome and detail, always all of them, in this order,
//     and no other (neither prev nor hash);
//   - id a decimal integer, without sign, exponent or leading zeros;
//   - time in UTC, RFC 3339 with exactly nine fractional digits and "Z";
//   - every other value a JSON string that escapes only what JSON
//     requires: " as \", \ as \\, U+0008 \b, U+0009 \t, U+000A \n, U+000C
//     \f, U+000D \r, any other character below U+0020 as \u00xx (lower-case
//     hex); every other character is its UTF-8 bytes, unescaped (<, >, &,
//     U+007F, U+2028 and every non-ASCII character included).
//
// This is what Python's json.dumps(..., ensure_ascii=False,
// separators=(",", ":")) writes for the members in this order.
//
// A record's hash is the lower-case hex SHA-256 of its prev — 64 ASCII
// hex digits — immediately followed by its canonical JSON. Its prev is
// the hash of the record before it: 64 zeros for the first record of a
// trail never cut; after a cut, the hash of the last record cut.
//
// The API's, the CLI's and the console's JSON of a record is its canonical
// JSON with prev and hash added (an API answer may escape <, > and & as
// \u003c, \u003e, \u0026, which a JSON decoder reads back the same). So an
// auditor recomputes every hash of an export, `myriarchd audit -o json`
// (one record per line, newest first), with a few lines of Python 3:
//
//	import hashlib, json, sys
//	FIELDS = ("id", "time", "actor", "role", "via", "action", "target",
//	          "source", "requestId", "outcome", "detail")
//	records = [json.loads(line) for line in sys.stdin][::-1]  # oldest first
//	prev = records[0]["prev"] if records else "0" * 64
//	if records and records[0]["id"] == 1 and prev != "0" * 64:
//	    sys.exit("record 1 does not start the trail")
//	for r in records:
//	    canonical = json.dumps({k: r[k] for k in FIELDS}, ensure_ascii=False, separators=(",", ":"))
//	    if r["prev"] != prev or r["hash"] != hashlib.sha256((prev + canonical).encode()).hexdigest():
//	        sys.exit("record %d does not follow the record before it" % r["id"])
//	    prev = r["hash"]
//	print("%d records chained, the last hash %s" % (len(records), prev))
//
// An export of the whole trail proves it from its first record; the first
// record of a trail that was cut follows the hash that the latest cut's
// record names.
//
// # Cuts
//
// Records are never changed, and no API removes them: the stores refuse
// it in the database itself. Retention (myriarchd serve --audit-retention)
// cuts whole prefixes: the oldest records, up to the first one newer than
// the retention, in cuts of at most 10 000 records. A cut keeps the id and hash of
// the last record it removed as the trail's anchor, and appends its own
// record, action audit.cut, whose detail says how many records it cut, up
// to which id, and that hash:
//
//	cut 9000 records up to id 9000; last cut hash 3f…
//
// Verification starts from the anchor, which the latest audit.cut record
// must name, and proves the rest.
//
// # What the chain proves
//
// The hashes use no secret, so whoever can write to the database can
// recompute the chain after a change. They prove the trail as of its last
// hash: a change anywhere before a hash an auditor kept (an export
// shipped to a SIEM holds every hash) is found. Verification
// (GET /api/v1/audit/verify) checks the trail against itself: a record
// changed, removed or inserted without recomputing every hash after it,
// and a prefix removed without a cut's record, are each named by the first
// record that does not follow.
package audit
