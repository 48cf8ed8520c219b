package blueprint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// maxFileSize bounds one authored file; nothing legitimate comes close.
const maxFileSize = 4 << 20

// Source is one source root. Dir names the root in messages and is where
// Git history is looked up; FS reads the root's contents.
type Source struct {
	Dir string
	FS  fs.FS

	// osDir, when set, says that FS is os.DirFS(osDir), so that files can
	// be read without the os.File machinery (see readOSFile).
	osDir string
}

// Load reads the estate under the given source root directories. See
// [LoadSources].
func Load(roots ...string) (*Estate, error) {
	srcs := make([]Source, len(roots))
	for i, r := range roots {
		srcs[i] = Source{Dir: r, FS: os.DirFS(r), osDir: r}
	}
	return LoadSources(srcs)
}

// checkFile refuses what the load must not read: special files (a FIFO
// would block it) and symbolic links that leave the source root. A link
// is followed only on a root read from the operating system's file
// system, and only to a regular file inside the root; the message never
// says more about its target.
func (src Source) checkFile(p string, mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return ""
	case mode&fs.ModeSymlink == 0:
		return "not a regular file (special files are not read)"
	case src.osDir == "":
		return "a symbolic link (not followed here)"
	}
	root, err := filepath.EvalSymlinks(src.osDir)
	if err != nil {
		return "cannot resolve the source root"
	}
	target, err := filepath.EvalSymlinks(filepath.Join(src.osDir, filepath.FromSlash(p)))
	if err != nil {
		return "a symbolic link that does not resolve"
	}
	if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "a symbolic link that resolves outside the source root (not read)"
	}
	if st, err := os.Stat(target); err != nil || !st.Mode().IsRegular() {
		return "a symbolic link to something that is not a regular file (not read)"
	}
	return ""
}

type objectKind int

const (
	kindBlueprint objectKind = iota
	kindComponent
	kindRequirement
)

var kindDirs = map[string]objectKind{
	"blueprints":   kindBlueprint,
	"components":   kindComponent,
	"requirements": kindRequirement,
}

var kindNames = [...]string{"Blueprint", "Component", "Requirement"}

type job struct {
	src        Source
	rel        string // slash path relative to the root
	kind       objectKind
	team, name string

	// filled by parse
	bp   *Blueprint
	comp *Component
	req  *Requirement
	errs LoadErrors
}

// LoadSources reads every source root and returns the estate, or nil and a
// [LoadErrors] holding every problem in every file. Each root must contain a
// teams/ tree holding teams/<team>/blueprints/<name>.yaml,
// teams/<team>/components/<name>.yaml and teams/<team>/requirements/<name>.yaml.
func LoadSources(srcs []Source) (*Estate, error) {
	var all LoadErrors
	if len(srcs) == 0 {
		all = append(all, LoadError{Message: "no source roots given"})
		return nil, all
	}
	var jobs []*job
	// Files are parsed while the walk goes on finding more.
	pool := startParsing()
	given := map[string]bool{}
	for _, src := range srcs {
		if key := filepath.Clean(src.Dir); given[key] {
			all = append(all, LoadError{File: src.Dir, Message: "source root given more than once"})
			continue
		} else {
			given[key] = true
		}
		found, es := scanRoot(src, pool.add)
		all = append(all, es...)
		jobs = append(jobs, found...)
	}
	pool.wait()

	est := &Estate{
		Blueprints:   map[string]*Blueprint{},
		Components:   map[string]*Component{},
		Requirements: map[string]*Requirement{},
	}
	for _, s := range srcs {
		est.Roots = append(est.Roots, s.Dir)
	}
	var first [3]map[string]*job // the job that defined each id first
	for k := range first {
		first[k] = make(map[string]*job, len(jobs))
	}
	for _, j := range jobs {
		all = append(all, j.errs...)
		id := j.team + "/" + j.name
		if prev, dup := first[j.kind][id]; dup {
			all = append(all, LoadError{File: joinPath(j.src.Dir, j.rel), Message: fmt.Sprintf(
				"duplicate %s id %q across source roots: also defined in %s", kindNames[j.kind], id, joinPath(prev.src.Dir, prev.rel))})
			continue
		}
		first[j.kind][id] = j
		switch {
		case j.bp != nil:
			est.Blueprints[id] = j.bp
		case j.comp != nil:
			est.Components[id] = j.comp
		case j.req != nil:
			est.Requirements[id] = j.req
		}
	}
	if len(all) > 0 {
		all.sort()
		return nil, all
	}
	return est, nil
}

// scanRoot lists the authored files of one root and reports layout
// problems: no teams/ tree, nothing authored, and YAML files outside the
// three authored places (which would otherwise be silently ignored).
// Each job is also handed to found as soon as it is listed.
func scanRoot(src Source, found func(*job)) ([]*job, LoadErrors) {
	var es LoadErrors
	teamsFile := joinPath(src.Dir, "teams")
	if _, err := fs.Stat(src.FS, "."); err != nil {
		es = append(es, LoadError{File: src.Dir, Message: fmt.Sprintf("cannot read source root: %v", err)})
		return nil, es
	}
	st, err := fs.Stat(src.FS, "teams")
	if err != nil || !st.IsDir() {
		es = append(es, LoadError{File: src.Dir, Message: "source root has no teams/ tree"})
		return nil, es
	}
	var jobs []*job
	walkErr := fs.WalkDir(src.FS, "teams", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			es = append(es, LoadError{File: joinPath(src.Dir, p), Message: fmt.Sprintf("cannot read: %v", err)})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && p != "teams" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		ext := path.Ext(p)
		if ext != ".yaml" && ext != ".yml" {
			return nil
		}
		if msg := src.checkFile(p, d.Type()); msg != "" {
			es = append(es, LoadError{File: joinPath(src.Dir, p), Message: msg})
			return nil
		}
		// teams/<team>/<kind>/<file>, split without allocating.
		var parts [4]string
		kind, known := objectKind(0), false
		if strings.Count(p, "/") == 3 {
			rest := p
			for i := range 3 {
				parts[i], rest, _ = strings.Cut(rest, "/")
			}
			parts[3] = rest
			kind, known = kindDirs[parts[2]]
		}
		switch {
		case !known:
			es = append(es, LoadError{File: joinPath(src.Dir, p), Message: "YAML file outside the estate layout: authored files live at teams/<team>/{blueprints,components,requirements}/<name>.yaml"})
		case ext == ".yml":
			es = append(es, LoadError{File: joinPath(src.Dir, p), Message: "authored files use the .yaml extension, not .yml"})
		default:
			j := &job{src: src, rel: p, kind: kind, team: parts[1], name: strings.TrimSuffix(parts[3], ".yaml")}
			jobs = append(jobs, j)
			found(j)
		}
		return nil
	})
	if walkErr != nil {
		es = append(es, LoadError{File: teamsFile, Message: fmt.Sprintf("cannot walk: %v", walkErr)})
	}
	if len(jobs) == 0 && len(es) == 0 {
		es = append(es, LoadError{File: teamsFile, Message: "nothing authored: no Blueprints, Components or Requirements under teams/"})
	}
	return jobs, es
}

// parsePool parses files on GOMAXPROCS goroutines. Each job keeps its own
// results, so the load stays deterministic whatever order they finish in.
type parsePool struct {
	next chan *job
	wg   sync.WaitGroup
}

func startParsing() *parsePool {
	workers := runtime.GOMAXPROCS(0)
	p := &parsePool{next: make(chan *job, 4*workers)}
	for range workers {
		p.wg.Go(func() {
			var w worker
			for j := range p.next {
				j.parse(&w)
			}
		})
	}
	return p
}

func (p *parsePool) add(j *job) { p.next <- j }

// wait returns when every added job is parsed.
func (p *parsePool) wait() {
	close(p.next)
	p.wg.Wait()
}

// worker holds what one parsing goroutine reuses from file to file.
type worker struct {
	buf     []byte
	scratch fastScratch
}

func (j *job) parse(w *worker) {
	e := errs{file: joinPath(j.src.Dir, j.rel), list: &j.errs}
	var data []byte
	var err error
	if j.src.osDir != "" {
		data, err = readOSFile(j.src.osDir, j.rel, w.buf[:0])
	} else {
		data, err = readInto(j.src.FS, j.rel, w.buf[:0])
	}
	w.buf = data[:0]
	if err != nil {
		e.at(0, "%v", err)
		return
	}
	// One copy of the file: every name and config value of the parsed
	// objects is a substring of it.
	top := parseText(string(data), &w.scratch, e)
	if top == nil {
		return
	}
	switch j.kind {
	case kindBlueprint:
		b := parseBlueprint(top, j.team, e)
		if b == nil {
			return
		}
		checkName(b.Name, j.name, keyLine(top, "name"), "Blueprint", e)
		b.Origin = Origin{Root: j.src.Dir, Rel: j.rel}
		for _, c := range b.Components {
			c.Origin.Root, c.Origin.Rel = j.src.Dir, j.rel
			c.rid = c.RenderedID()
		}
		j.bp = b
	case kindComponent:
		c := parseComponent(top, false, e)
		if c == nil {
			return
		}
		checkName(c.Name, j.name, keyLine(top, "name"), "Component", e)
		c.Team = j.team
		c.rid = c.RenderedID()
		c.Origin = Origin{Root: j.src.Dir, Rel: j.rel}
		j.comp = c
	case kindRequirement:
		r := parseRequirement(top, e)
		if r == nil {
			return
		}
		checkName(r.Name, j.name, keyLine(top, "name"), "Requirement", e)
		r.Team = j.team
		r.Origin = Origin{Root: j.src.Dir, Rel: j.rel}
		j.req = r
	}
}

func checkName(name, fileName string, line int, what string, e errs) {
	switch {
	case name == "":
		e.at(line, "%s is missing required field \"name\" (must be %q, the file name)", what, fileName)
	case name != fileName:
		e.at(line, "%s name %q does not match the file name %q", what, name, fileName)
	}
}

// keyLine is the line of key in mapping m, or of m itself when absent.
func keyLine(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return m.Line
}

// readInto reads the file p into buf (reusing its storage) and returns the
// bytes, refusing files larger than maxFileSize.
func readInto(fsys fs.FS, p string, buf []byte) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return buf, fmt.Errorf("cannot read: %w", err)
	}
	defer f.Close()
	return fill(buf, f.Read)
}

// fill appends everything read returns until io.EOF to buf, refusing more
// than maxFileSize bytes.
func fill(buf []byte, read func([]byte) (int, error)) ([]byte, error) {
	if cap(buf) == 0 {
		buf = make([]byte, 0, 64<<10)
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxFileSize {
				return buf[:0], errors.New("file is larger than 4 MiB")
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+max(n, 0)]
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf[:0], fmt.Errorf("cannot read: %w", err)
		}
	}
	if len(buf) > maxFileSize {
		return buf[:0], errors.New("file is larger than 4 MiB")
	}
	return buf, nil
}
