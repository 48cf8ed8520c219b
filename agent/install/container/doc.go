// Package container is the install back-end for container mode: the
// collector (with its supervisor) runs as a Docker container named
// container.name, and an offered collector package is a new image for it.
//
// Offers:
//
//   - docker://<ref>@sha256:<hex> — the image is pulled by digest (registry
//     credentials come from the offer's headers, see registryAuth) and the
//     pulled manifest digest must equal file.content_hash. A signature, when
//     present (required with trust.require_signature), is a minisign
//     signature of the digest text "sha256:<hex>".
//   - http(s)://… — an image tarball (`docker save` format), downloaded and
//     verified by the engine (agent/install: hash, minisign, size cap,
//     resume), then loaded with ImageLoad.
//
// Either way the image's org.opencontainers.image.version label must equal
// the offered version.
//
// Its part of the transaction (agent/install runs the rest: admission,
// download, verification, journal, quarantine, statuses):
//
//	prepare: inspect <name>, refuse what cannot be reproduced (nothing
//	  downloaded, nothing touched, nothing quarantined)
//	stage: image present and labelled with the offered version → create
//	  <name>-next with <name>'s settings, re-inspect it and compare
//	activate: stop <name> (kept, restart policy "no" meanwhile) → start
//	  <name>-next
//	health gate: running and not restarted for the health window; Docker
//	  HEALTHCHECK healthy when the image has one; the supervisor health
//	  endpoint when configured; the supervisor instance UID in its storage
//	  dir unchanged
//	commit: remove <name> → rename <name>-next to <name>
//	rollback: remove <name>-next, restore the restart policy, start <name>
//
// A TopLevel offer (self-update) is refused (NoSelfUpdate): in container
// mode the updater is replaced with its own image. Its state files carry
// StatePrefix; container-swap.json holds what recovery needs beyond the
// journal (the old container, its restart policy, the new one). At start,
// Reconcile makes sure exactly one container named <name> runs.
package container
