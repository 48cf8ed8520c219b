// Package estate loads the operator's declarative estate directory
// (inventory labels now; fleets and the package catalog build on it). A load
// either succeeds completely or reports every problem with its file and
// line, so the server can keep the last good estate in force.
package estate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/blueprint"
)

// Estate is one consistent, validated load of the estate directory.
type Estate struct {
	Dir       string
	Inventory []InventoryEntry
	Fleets    []Fleet
	// Packages maps a package name to its catalog versions.
	Packages map[string][]PackageVersion
	// Blueprints is the Blueprint tree (teams/…); nil without one.
	Blueprints *blueprint.Estate
	// Webhooks are where notifications are sent (notifications/*.yaml).
	Webhooks []Webhook
	// Keyring is the signed keyring offered to updaters (trust/); nil
	// without one.
	Keyring *Keyring
	// Findings are what blueprint-check reports of the Blueprints
	// (references, ordering, variables no context has): they never block
	// the load.
	Findings []blueprint.Finding
	// Revision identifies the content loaded (see Revision).
	Revision string
	// Author is the author of the Git commit Revision names ("Name
	// <email>"), "" when the estate is identified by its files.
	Author string
	// LoadedAt is when the load finished.
	LoadedAt time.Time
}

// Problem is one thing wrong in one file.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// LoadError lists every problem found; nothing of the load is used.
type LoadError struct {
	Problems []Problem
	// Revision is the revision the problems were found in, read before
	// the files: one written meanwhile shows as a newer revision.
	Revision string
}

func (e *LoadError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return "estate has errors:\n  " + strings.Join(msgs, "\n  ")
}

// problems collects errors during one load; fs is the estate directory,
// through which every file is read (see confine.go).
type problems struct {
	root string
	fs   *os.Root
	list []Problem
}

func (ps *problems) add(file string, line int, format string, args ...any) {
	rel, err := filepath.Rel(ps.root, file)
	if err != nil {
		rel = file
	}
	ps.list = append(ps.list, Problem{File: rel, Line: line, Message: fmt.Sprintf(format, args...)})
}

// Load reads dir. A missing dir is an error; missing subdirectories are empty.
func Load(dir string) (*Estate, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("estate %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("estate %s: not a directory", dir)
	}
	fsRoot, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("estate %s: %w", dir, err)
	}
	defer fsRoot.Close()
	ps := &problems{root: dir, fs: fsRoot}
	e := &Estate{Dir: dir}
	// The revision is read first: a change during the load then shows as a
	// new revision at the next look, never as an old one over new content.
	rev, err := Revision(dir)
	if err != nil {
		return nil, err
	}
	e.Revision, e.Author = rev, CommitAuthor(dir, rev)
	e.Inventory = loadInventory(ps, filepath.Join(dir, "inventory"))
	loadBlueprints(ps, e)
	for _, ext := range extensions {
		ext(ps, e)
	}
	if len(ps.list) > 0 {
		sort.SliceStable(ps.list, func(i, j int) bool {
			if ps.list[i].File != ps.list[j].File {
				return ps.list[i].File < ps.list[j].File
			}
			return ps.list[i].Line < ps.list[j].Line
		})
		return nil, &LoadError{Problems: ps.list, Revision: rev}
	}
	e.LoadedAt = time.Now().UTC()
	return e, nil
}

// extensions are further loaders (fleets, packages) run after the inventory.
var extensions []func(*problems, *Estate)

// yamlFiles lists *.yaml and *.yml in dir, sorted; a missing dir is empty.
func yamlFiles(ps *problems, dir string) []string {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		ps.add(dir, 0, "cannot read directory: %v", err)
		return nil
	}
	var out []string
	for _, en := range entries {
		n := en.Name()
		if !en.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// parseFile reads one single-document YAML file: its bytes and root node.
func parseFile(ps *problems, path string) ([]byte, *yaml.Node, bool) {
	data, err := ps.readFile(path)
	if err != nil {
		ps.add(path, 0, "cannot read: %v", err)
		return nil, nil, false
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			ps.add(path, 0, "empty file")
		} else {
			ps.add(path, yamlErrLine(err), "malformed YAML: %v", trimYAMLErr(err))
		}
		return nil, nil, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		ps.add(path, extra.Line, "more than one YAML document")
		return nil, nil, false
	}
	if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
		ps.add(path, 0, "empty file")
		return nil, nil, false
	}
	if !checkSize(ps, path, doc.Content[0]) {
		return nil, nil, false
	}
	return data, doc.Content[0], true
}

// decodeMapping reads path, one YAML mapping, strictly into a new T and
// returns it with its root node (for the lines of its keys); notMapping
// is the problem said of a file that is not a mapping. False when a
// problem was added.
func decodeMapping[T any](ps *problems, path, notMapping string) (*T, *yaml.Node, bool) {
	data, root, ok := parseFile(ps, path)
	if !ok {
		return nil, nil, false
	}
	if root.Kind != yaml.MappingNode {
		ps.add(path, root.Line, "%s", notMapping)
		return nil, nil, false
	}
	v := new(T)
	if !decodeStrict(ps, path, data, v) {
		return nil, nil, false
	}
	return v, root, true
}

// decodeStrict decodes a file's bytes into v, reporting unknown fields and
// type errors with their lines. When only unknown fields are wrong, v is still
// filled so the caller's own checks can report their problems too (the load
// fails either way).
func decodeStrict(ps *problems, path string, data []byte, v any) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil {
		return true
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		ps.add(path, yamlErrLine(err), "%v", trimYAMLErr(err))
		return false
	}
	onlyUnknown := true
	for _, m := range te.Errors {
		msg := stripLine(m)
		if f := unknownFieldRE.FindStringSubmatch(msg); f != nil {
			msg = "unknown field " + f[1]
		} else {
			onlyUnknown = false
		}
		ps.add(path, relLine(m), "%s", msg)
	}
	if !onlyUnknown {
		return false
	}
	return yaml.Unmarshal(data, v) == nil
}
