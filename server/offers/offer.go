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
func (e *Engine) buildOffer(osType, arch string, pv *estate.PackageVersion, mode string) (*protobufs.PackagesAvailable, []byte, string) {
	file := &protobufs.DownloadableFile{}
	if mode == "container" {
		im := pv.Image
		switch {
		case im != nil && im.Ref != "":
			digest, _ := estate.ImageDigest(im.Ref)
			file.DownloadUrl = "docker://" + im.Ref
			file.ContentHash, _ = hex.DecodeString(digest)
		case im != nil && im.Archive != nil:
			file.DownloadUrl = e.sourceURL(im.Archive.File, im.Archive.URL)
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
		file.DownloadUrl = e.sourceURL(art.File, art.URL)
		file.ContentHash, _ = hex.DecodeString(art.SHA256)
		file.Signature = []byte(art.Signature)
	}
	pa := &protobufs.PackageAvailable{
		Type:    protobufs.PackageType_PackageType_Addon,
		Version: pv.Version,
		File:    file,
	}
	pa.Hash = packageHash(pv.Name, pa)
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

// sourceURL turns an estate file into an absolute URL served by myriarchd.
func (e *Engine) sourceURL(file, rawURL string) string {
	if rawURL != "" {
		return rawURL
	}
	base := ""
	if e.opts.BaseURL != nil {
		base = strings.TrimRight(e.opts.BaseURL(), "/")
	}
	p := path.Clean("/" + filepath.ToSlash(file))
	return base + ArtifactPath + (&url.URL{Path: strings.TrimPrefix(p, "/")}).EscapedPath()
}

// packageHash changes whenever anything in the offer changes.
func packageHash(name string, pa *protobufs.PackageAvailable) []byte {
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
	field([]byte(pa.File.GetDownloadUrl()))
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
