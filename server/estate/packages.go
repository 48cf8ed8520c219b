package estate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	goversion "github.com/hashicorp/go-version"
	"go.yaml.in/yaml/v3"
)

// PackageVersion is one catalog entry: packages/<name>/<version>.yaml.
type PackageVersion struct {
	Name      string     `yaml:"name"`
	Version   string     `yaml:"version"`
	Artifacts []Artifact `yaml:"artifacts"`
	Image     *Image     `yaml:"image"`
	File      string     `yaml:"-"`
}

// Artifact is a binary-mode package for one platform: a file in the estate
// (served by myriarchd) or an external URL.
type Artifact struct {
	OS        string `yaml:"os"`
	Arch      string `yaml:"arch"`
	File      string `yaml:"file"`
	URL       string `yaml:"url"`
	SHA256    string `yaml:"sha256"`
	Signature string `yaml:"signature"`
	// SigstoreBundle is an estate file holding the artifact's Sigstore
	// bundle (.sigstore.json), offered in place of a minisign signature.
	SigstoreBundle string `yaml:"sigstoreBundle"`
	Executable     string `yaml:"executable"`
}

// Image is the container-mode form of a package.
type Image struct {
	Ref     string        `yaml:"ref"`
	Archive *ImageArchive `yaml:"archive"`
}

// ImageArchive is an image tarball, in the estate or at a URL.
type ImageArchive struct {
	File           string `yaml:"file"`
	URL            string `yaml:"url"`
	SHA256         string `yaml:"sha256"`
	Signature      string `yaml:"signature"`
	SigstoreBundle string `yaml:"sigstoreBundle"`
}

// Package returns the catalog entry for name at version (leading v ignored), or nil.
func (e *Estate) Package(name, version string) *PackageVersion {
	want, err := goversion.NewVersion(version)
	if err != nil {
		return nil
	}
	for i := range e.Packages[name] {
		pv := &e.Packages[name][i]
		if v, err := goversion.NewVersion(pv.Version); err == nil && v.Equal(want) {
			return pv
		}
	}
	return nil
}

var (
	sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	digestRE = regexp.MustCompile(`@sha256:([0-9a-f]{64})$`)
)

// ImageDigest returns the hex digest pinned in an image reference.
func ImageDigest(ref string) (string, bool) {
	m := digestRE.FindStringSubmatch(ref)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func loadPackages(ps *problems, e *Estate) {
	e.Packages = map[string][]PackageVersion{}
	pkgRoot := filepath.Join(e.Dir, "packages")
	dirs, err := os.ReadDir(pkgRoot)
	if err != nil && !os.IsNotExist(err) {
		ps.add(pkgRoot, 0, "cannot read directory: %v", err)
		return
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		for _, path := range yamlFiles(ps, filepath.Join(pkgRoot, d.Name())) {
			if pv, ok := loadPackage(ps, e.Dir, d.Name(), path); ok {
				e.Packages[pv.Name] = append(e.Packages[pv.Name], pv)
			}
		}
	}
}

func loadPackage(ps *problems, root, dirName, path string) (PackageVersion, bool) {
	pvp, node, ok := decodeMapping[PackageVersion](ps, path, "a package file is a mapping (name, version, artifacts, image)")
	if !ok {
		return PackageVersion{}, false
	}
	pv := *pvp
	pv.File = path
	bad := len(ps.list)
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".yaml"), ".yml")
	if pv.Name != dirName {
		ps.add(path, keyLine(node, "name"), "name %q must equal its directory %q", pv.Name, dirName)
	}
	if _, err := goversion.NewVersion(pv.Version); err != nil {
		ps.add(path, keyLine(node, "version"), "version %q is not a version", pv.Version)
	} else if pv.Version != base {
		ps.add(path, keyLine(node, "version"), "version %q must equal the file name %q", pv.Version, base)
	}
	if len(pv.Artifacts) == 0 && pv.Image == nil {
		ps.add(path, node.Line, "needs artifacts (binary mode) or image (container mode)")
	}
	artNode := childNode(node, "artifacts")
	platforms := map[string]bool{}
	for i, a := range pv.Artifacts {
		line := node.Line
		if artNode != nil && i < len(artNode.Content) {
			line = artNode.Content[i].Line
		}
		where := fmt.Sprintf("artifacts[%d]", i)
		if a.OS == "" || a.Arch == "" {
			ps.add(path, line, "%s: os and arch are required", where)
		}
		if platforms[a.OS+"/"+a.Arch] {
			ps.add(path, line, "%s: a second artifact for %s/%s", where, a.OS, a.Arch)
		}
		platforms[a.OS+"/"+a.Arch] = true
		if a.Executable == "" {
			ps.add(path, line, "%s: executable is required", where)
		}
		checkSource(ps, path, line, where, a.File, a.URL, a.SHA256)
		loadBundle(ps, path, line, where, &pv.Artifacts[i].Signature, a.SigstoreBundle)
	}
	if im := pv.Image; im != nil {
		line := keyLine(node, "image")
		if im.Ref == "" && im.Archive == nil {
			ps.add(path, line, "image: needs ref and/or archive")
		}
		if im.Ref != "" {
			if _, ok := ImageDigest(im.Ref); !ok {
				ps.add(path, line, "image.ref %q must be pinned by digest (…@sha256:<64 hex>)", im.Ref)
			}
		}
		if ar := im.Archive; ar != nil {
			checkSource(ps, path, line, "image.archive", ar.File, ar.URL, ar.SHA256)
			loadBundle(ps, path, line, "image.archive", &ar.Signature, ar.SigstoreBundle)
		}
	}
	return pv, len(ps.list) == bad
}

// checkSource validates a file-or-url artifact and, for estate files, that
// the file exists inside the estate (links resolved) and has the declared
// SHA-256. A file outside the estate is named so, with no digest.
func checkSource(ps *problems, path string, line int, where, file, rawURL, sum string) {
	switch {
	case file == "" && rawURL == "":
		ps.add(path, line, "%s: needs file or url", where)
	case file != "" && rawURL != "":
		ps.add(path, line, "%s: set file or url, not both", where)
	case rawURL != "":
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			ps.add(path, line, "%s: url %q must be an absolute http(s) URL", where, rawURL)
		}
	}
	if !sha256RE.MatchString(sum) {
		ps.add(path, line, "%s: sha256 must be 64 lower-case hex characters (got %d characters)", where, len(sum))
		return
	}
	if file == "" {
		return
	}
	clean := filepath.Clean(file)
	if filepath.IsAbs(file) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		ps.add(path, line, "%s: file %q must be a path inside the estate", where, file)
		return
	}
	got, err := fileSHA256(ps, clean)
	switch {
	case errors.Is(err, ErrOutsideEstate):
		ps.add(path, line, "%s: file %s resolves outside the estate", where, file)
		return
	case err != nil:
		ps.add(path, line, "%s: file %s: %v", where, file, err)
		return
	}
	if got != sum {
		ps.add(path, line, "%s: file %s has sha256 %s, not the declared %s", where, file, got, sum)
	}
}

// MaxSigstoreBundle bounds a Sigstore bundle read from the estate (the
// updater reads no larger one).
const MaxSigstoreBundle = 256 << 10

// loadBundle reads an artifact's Sigstore bundle file (inside the estate)
// into its offered signature: a bundle of at most MaxSigstoreBundle bytes,
// with a Sigstore bundle's media type, and no minisign signature beside
// it. The updater verifies it.
func loadBundle(ps *problems, path string, line int, where string, signature *string, file string) {
	if file == "" {
		return
	}
	if *signature != "" {
		ps.add(path, line, "%s: set signature or sigstoreBundle, not both", where)
		return
	}
	clean := filepath.Clean(file)
	if filepath.IsAbs(file) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		ps.add(path, line, "%s: sigstoreBundle %q must be a path inside the estate", where, file)
		return
	}
	f, err := openIn(ps.fs, ps.root, clean)
	if err != nil {
		ps.add(path, line, "%s: sigstoreBundle %s: %v", where, file, err)
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSigstoreBundle+1))
	switch {
	case err != nil:
		ps.add(path, line, "%s: sigstoreBundle %s: %v", where, file, err)
		return
	case len(data) > MaxSigstoreBundle:
		ps.add(path, line, "%s: sigstoreBundle %s is larger than %d KiB", where, file, MaxSigstoreBundle>>10)
		return
	}
	var head struct {
		MediaType string `json:"mediaType"`
	}
	if err := json.Unmarshal(data, &head); err != nil || !strings.HasPrefix(head.MediaType, "application/vnd.dev.sigstore.bundle") {
		ps.add(path, line, "%s: sigstoreBundle %s is not a Sigstore bundle (a JSON object whose mediaType is application/vnd.dev.sigstore.bundle…)", where, file)
		return
	}
	*signature = string(data)
}

func childNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// fileSHA256 hashes an estate file (rel to the estate), opened inside it,
// remembering results by size and mtime so reloads do not rehash unchanged
// artifacts.
func fileSHA256(ps *problems, rel string) (string, error) {
	f, err := openIn(ps.fs, ps.root, rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	key := hashKey{filepath.Join(ps.root, rel), st.Size(), st.ModTime()}
	hashCache.Lock()
	sum, ok := hashCache.m[key]
	hashCache.Unlock()
	if ok {
		return sum, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum = hex.EncodeToString(h.Sum(nil))
	hashCache.Lock()
	hashCache.m[key] = sum
	hashCache.Unlock()
	return sum, nil
}

type hashKey struct {
	path  string
	size  int64
	mtime time.Time
}

var hashCache = struct {
	sync.Mutex
	m map[hashKey]string
}{m: map[hashKey]string{}}
