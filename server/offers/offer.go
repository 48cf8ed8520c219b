package offers

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/server/estate"
)

// ArtifactPath is where myriarchd serves estate files on the OpAMP listener.
const ArtifactPath = "/artifacts/"

// buildOffer makes the complete desired package set for a collector's
// updater: one Addon package named after the catalog entry. It returns the
// per-package hash, or a reason when no artifact fits the platform or mode.
//
// The hash names the package, not the instance that serves it: an estate
// file is hashed by its place in the estate, not by the URL of this
// instance's listener, so every myriarchd sharing a store makes the same
// offer with the same hash, each with its own download URL.
func (e *Engine) buildOffer(osType, arch string, pv *estate.PackageVersion, mode string) (*protobufs.PackagesAvailable, []byte, string) {
	file := &protobufs.DownloadableFile{}
	var source string // what the hash reads for the download URL
	if mode == "container" {
		im := pv.Image
		switch {
		case im != nil && im.Ref != "":
			digest, _ := estate.ImageDigest(im.Ref)
			file.DownloadUrl = "docker://" + im.Ref
			source = file.DownloadUrl
			file.ContentHash, _ = hex.DecodeString(digest)
		case im != nil && im.Archive != nil:
			file.DownloadUrl, source = e.sourceURL(im.Archive.File, im.Archive.URL)
			file.ContentHash, _ = hex.DecodeString(im.Archive.SHA256)
			file.Signature = []byte(im.Archive.Signature)
		default:
			return nil, nil, fmt.Sprintf("package %s %s has no container image", pv.Name, pv.Version)
		}
	} else {
		var art *estate.Artifact
		for i := range pv.Artifacts {
			if pv.Artifacts[i].OS == osType && pv.Artifacts[i].Arch == arch {
				art = &pv.Artifacts[i]
			}
		}
		if art == nil {
			return nil, nil, fmt.Sprintf("package %s %s has no artifact for %s/%s", pv.Name, pv.Version, orUnknown(osType), orUnknown(arch))
		}
		file.DownloadUrl, source = e.sourceURL(art.File, art.URL)
		file.ContentHash, _ = hex.DecodeString(art.SHA256)
		file.Signature = []byte(art.Signature)
	}
	pa := &protobufs.PackageAvailable{
		Type:    protobufs.PackageType_PackageType_Addon,
		Version: pv.Version,
		File:    file,
	}
	pa.Hash = packageHash(pv.Name, pa, source)
	all := sha256.Sum256(append([]byte(pv.Name+"\x00"), pa.Hash...))
	return &protobufs.PackagesAvailable{
		Packages:        map[string]*protobufs.PackageAvailable{pv.Name: pa},
		AllPackagesHash: all[:],
	}, pa.Hash, ""
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// sourceURL turns an estate file into an absolute URL served by myriarchd,
// and returns what the offer's hash reads for it: the URL the estate
// gives, or for a file served here its path under ArtifactPath.
func (e *Engine) sourceURL(file, rawURL string) (abs, hashed string) {
	if rawURL != "" {
		return rawURL, rawURL
	}
	base := ""
	if e.opts.BaseURL != nil {
		base = strings.TrimRight(e.opts.BaseURL(), "/")
	}
	p := path.Clean("/" + filepath.ToSlash(file))
	rel := ArtifactPath + (&url.URL{Path: strings.TrimPrefix(p, "/")}).EscapedPath()
	return base + rel, rel
}

// packageHash changes whenever anything in the offer changes but the
// instance serving it (source stands for the download URL).
func packageHash(name string, pa *protobufs.PackageAvailable, source string) []byte {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(name))
	field([]byte(pa.Type.String()))
	field([]byte(pa.Version))
	field([]byte(source))
	field(pa.File.GetContentHash())
	field(pa.File.GetSignature())
	if hd := pa.File.GetHeaders(); hd != nil {
		var keys []string
		for _, kv := range hd.Headers {
			keys = append(keys, kv.Key+"\x00"+kv.Value)
		}
		sort.Strings(keys)
		for _, k := range keys {
			field([]byte(k))
		}
	}
	return h.Sum(nil)
}
