package install

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"golang.org/x/crypto/blake2b"

	"github.com/myriarch/myriarch/agent/admission"
	"github.com/myriarch/myriarch/agent/crashpoint"
	"github.com/myriarch/myriarch/agent/journal"
	"github.com/myriarch/myriarch/agent/verify"
)

// Txn is one install transaction as its back-end sees it: the journal
// record, the offer, the verified artifact, and the steps.
type Txn struct {
	e        *Engine
	b        *backend
	rec      *journal.Record
	pkg      *protobufs.PackageAvailable // nil while recovering
	artifact string                      // the verified download, "" when none
	log      *slog.Logger
}

func (e *Engine) newTxn(b *backend, p *protobufs.PackageAvailable) *Txn {
	rec := &journal.Record{
		ID:        strconv.FormatInt(time.Now().UnixNano(), 36),
		Kind:      b.desc.Kind,
		Package:   b.desc.Package,
		Version:   p.GetVersion(),
		Hash:      admission.HexHash(p),
		OfferHash: hex.EncodeToString(p.GetHash()),
		Started:   time.Now().UTC(),
	}
	return e.txnFor(b, rec, p)
}

func (e *Engine) txnFor(b *backend, rec *journal.Record, p *protobufs.PackageAvailable) *Txn {
	return &Txn{e: e, b: b, rec: rec, pkg: p,
		log: e.log.With("package", rec.Package, "version", rec.Version, "txn", rec.ID)}
}

// Record is the transaction's journal record; a back-end keeps in it what
// its recovery needs (PrevDir, NewDir), saved with the next Step.
func (t *Txn) Record() *journal.Record { return t.rec }

// Offer is the offered package; nil when the transaction is recovered
// after a restart.
func (t *Txn) Offer() *protobufs.PackageAvailable { return t.pkg }

// Artifact is the path of the downloaded and verified artifact; "" when a
// Fetcher acquired it or the transaction is recovered.
func (t *Txn) Artifact() string { return t.artifact }

// Log is the transaction's logger.
func (t *Txn) Log() *slog.Logger { return t.log }

// Step durably records point as the last completed step, then passes its
// crash point.
func (t *Txn) Step(point string) error {
	if err := t.e.j.Save(t.rec, point); err != nil {
		return err
	}
	t.Reach(point)
	return nil
}

// Mark is Step for a transaction that goes on whatever happens (a
// rollback): a journal error is logged.
func (t *Txn) Mark(point string) {
	if err := t.Step(point); err != nil {
		t.log.Error("journal not written; recovery from here repeats earlier steps", "step", point, "err", err)
	}
}

// Reach passes a crash point that is not a journal step.
func (t *Txn) Reach(point string) {
	crashpoint.Reach(point, t.e.crashAt, t.e.o.Observe)
}

// Progress reports Downloading with details (a registry pull's progress).
func (t *Txn) Progress(details *protobufs.PackageDownloadDetails) {
	t.e.setStatus(t.status(protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, "", details), false)
}

// VerifySignature applies trust.* to the offer's signature over content:
// a Sigstore bundle checked with trust.sigstore's policy, a minisign
// signature with the pinned keys, when the offer is signed so and the
// host trusts someone for it; required when trust.require_signature is
// set, otherwise the install goes on with a warning. A failure is an
// Artifact fault.
func (t *Txn) VerifySignature(c verify.Content) error {
	sig := t.pkg.GetFile().GetSignature()
	switch {
	case verify.IsSigstoreBundle(sig) && t.e.sigstore != nil:
		if err := t.e.sigstore.Verify(sig, c.SHA256); err != nil {
			return Failf(Artifact, "verify: %w", err)
		}
	case verify.IsSigstoreBundle(sig) && t.e.o.RequireSignature:
		return Failf(Artifact, "verify: %w", verify.ErrNoSigstorePolicy)
	case verify.IsSigstoreBundle(sig):
		t.log.Warn("installing an unverified package: a Sigstore bundle and no trust.sigstore policy, and trust.require_signature is false")
	case len(sig) > 0 && t.e.checksMinisign():
		keys, err := t.e.minisignKeys()
		if err != nil { // the host's keyring, not the artifact: never quarantined
			return Failf(Refused, "verify: %w", err)
		}
		if err := verify.Signature(keys, t.e.o.Now(), sig, c); err != nil {
			return Failf(Artifact, "verify: %w", err)
		}
	case t.e.o.RequireSignature:
		return Failf(Artifact, "verify: %w", verify.ErrNoSignature)
	default:
		t.log.Warn("installing an unverified package: no signature or no trusted key, and trust.require_signature is false")
	}
	return nil
}

// VerifySignatureOf is VerifySignature over a message (the digest text
// of an image pulled by digest).
func (t *Txn) VerifySignatureOf(msg []byte) error {
	sig := t.pkg.GetFile().GetSignature()
	if verify.IsSigstoreBundle(sig) {
		sum := sha256.Sum256(msg)
		return t.VerifySignature(verify.Content{SHA256: sum[:]})
	}
	if len(sig) == 0 || !t.e.checksMinisign() {
		return t.VerifySignature(verify.Content{})
	}
	f, err := os.CreateTemp(filepath.Join(t.e.o.StateDir, StagingDir), "signed-*.txt")
	if err != nil {
		return Failf(Transient, "verify: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(msg)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return Failf(Transient, "verify: %w", werr)
	}
	sum := blake2b.Sum512(msg)
	return t.VerifySignature(verify.Content{BLAKE2b512: sum[:], Path: f.Name()})
}

// status is a status about the transaction's offer.
func (t *Txn) status(s protobufs.PackageStatusEnum, msg string, details *protobufs.PackageDownloadDetails) *protobufs.PackageStatus {
	return &protobufs.PackageStatus{
		Name: t.rec.Package, ServerOfferedVersion: t.rec.Version, ServerOfferedHash: unhex(t.rec.StatusHash()),
		Status: s, ErrorMessage: msg, DownloadDetails: details,
	}
}

// prevName names what ran before, for messages.
func (t *Txn) prevName() string {
	switch {
	case t.rec.PrevVersion != "":
		return t.rec.PrevVersion
	case t.rec.PrevDir != "":
		return t.rec.PrevDir
	}
	return "the previous version"
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

// offeredBy is the offer a journal record installs, as far as telling it
// apart from another offer needs: its version and hashes.
func offeredBy(rec *journal.Record) *protobufs.PackageAvailable {
	return &protobufs.PackageAvailable{Version: rec.Version, Hash: unhex(rec.OfferHash),
		File: &protobufs.DownloadableFile{ContentHash: unhex(rec.Hash)}}
}
