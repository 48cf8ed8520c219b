// Package sigstoretest signs test artifacts with sigstore-go's virtual
// Sigstore (a Fulcio-like CA and a Rekor-like log in memory) and writes
// what an updater reads: a .sigstore.json bundle and a trusted_root.json.
package sigstoretest

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// An identity and issuer as the collector releases' are.
const (
	Identity = "https://github.com/open-telemetry/opentelemetry-collector-releases/.github/workflows/base-release.yaml@refs/tags/v0.149.0"
	Issuer   = "https://token.actions.githubusercontent.com"
)

// Bundle is a .sigstore.json (bundle v0.1: a certificate chain and
// a log entry with its signed entry timestamp) of what vs signed for
// identity and issuer, its entry integrated at (plus EntryDelay).
func Bundle(t testing.TB, vs *ca.VirtualSigstore, identity, issuer string, artifact []byte, at time.Time) []byte {
	t.Helper()
	e, err := vs.SignAtTime(identity, issuer, artifact, at.Add(EntryDelay))
	if err != nil {
		t.Fatal(err)
	}
	return BundleOf(t, vs, e, true)
}

// EntryDelay: the test CA's certificate is valid from the second it is
// made, to the second, for 10 minutes. An entry integrated at the instant
// the caller read the clock falls before it when the second turns while
// the certificate's key is made; a minute later is always inside.
const EntryDelay = time.Minute

// BundleOf writes e as a bundle. Its log entry, as the test CA gives it,
// lacks its kind and signed entry timestamp in the form a bundle holds
// them: they are filled in, the timestamp signed again by vs's log key.
func BundleOf(t testing.TB, vs *ca.VirtualSigstore, e *ca.TestEntity, withTlog bool) []byte {
	t.Helper()
	vc, err := e.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	ms := sc.MessageSignatureContent()
	var entries []*protorekor.TransparencyLogEntry
	if withTlog {
		tl, err := e.TlogEntries()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range tl {
			tle := proto.Clone(x.TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
			set, err := vs.RekorSignPayload(tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody),
				IntegratedTime: tle.IntegratedTime, LogIndex: tle.LogIndex, LogID: hex.EncodeToString(tle.LogId.KeyId)})
			if err != nil {
				t.Fatal(err)
			}
			tle.KindVersion = &protorekor.KindVersion{Kind: "hashedrekord", Version: "0.0.1"}
			tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
			entries = append(entries, tle)
		}
	}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle+json;version=0.1",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{
				Certificates: []*protocommon.X509Certificate{{RawBytes: vc.(*bundle.Certificate).Certificate().Raw}}}},
			TlogEntries: entries,
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: ms.Digest()},
			Signature:     ms.Signature()}},
	}
	out, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Root is vs's trusted_root.json.
func Root(t testing.TB, vs *ca.VirtualSigstore) []byte { return RootOf(t, vs, vs) }

// RootOf is a trusted_root.json of fulcio's certificate authorities and
// logs' logs.
func RootOf(t testing.TB, fulcio, logs *ca.VirtualSigstore) []byte {
	t.Helper()
	out, err := RootJSON(fulcio, logs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RootJSON is RootOf, for a caller without a test.
func RootJSON(fulcio, logs *ca.VirtualSigstore) ([]byte, error) {
	// The test CA keys its logs by the hex of their IDs and holds that text
	// as the ID; a trusted_root.json holds the ID's bytes.
	raw := func(logs map[string]*root.TransparencyLog) (map[string]*root.TransparencyLog, error) {
		out := map[string]*root.TransparencyLog{}
		for k, l := range logs {
			c := *l
			id, err := hex.DecodeString(k)
			if err != nil {
				return nil, err
			}
			c.ID = id
			out[k] = &c
		}
		return out, nil
	}
	ct, err := raw(logs.CTLogs())
	if err != nil {
		return nil, err
	}
	rekor, err := raw(logs.RekorLogs())
	if err != nil {
		return nil, err
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, fulcio.FulcioCertificateAuthorities(), ct, logs.TimestampingAuthorities(), rekor)
	if err != nil {
		return nil, err
	}
	return tr.MarshalJSON()
}

var helper struct {
	once sync.Once
	path string
	err  error
}

// HelperEnv names a myriarch-sigstore built beforehand for the system the
// tests run on (a Windows test binary under Wine has no Go toolchain).
const HelperEnv = "MYRIARCH_SIGSTORE_HELPER"

// Helper builds the Sigstore verifier the updater runs
// (cmd/myriarch-sigstore), once per test process, and returns its path.
func Helper(t testing.TB) string {
	t.Helper()
	helper.once.Do(func() {
		if path := os.Getenv(HelperEnv); path != "" { // built beforehand, where no Go toolchain is
			helper.path = path
			return
		}
		dir, err := os.MkdirTemp("", "myriarch-sigstore-helper-")
		if err != nil {
			helper.err = err
			return
		}
		name := "myriarch-sigstore"
		if runtime.GOOS == "windows" {
			name += ".exe"
		}
		helper.path = filepath.Join(dir, name)
		out, err := exec.Command("go", "build", "-o", helper.path, "github.com/myriarch/myriarch/cmd/myriarch-sigstore").CombinedOutput()
		if err != nil {
			helper.err = fmt.Errorf("building myriarch-sigstore: %v\n%s", err, out)
		}
	})
	if helper.err != nil {
		t.Fatal(helper.err)
	}
	return helper.path
}

// RootFile writes a trusted_root.json into t's temporary directory.
func RootFile(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
