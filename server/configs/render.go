package configs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/configrender"
)

// template is a compiled Blueprint with the renders it made so far, by
// context key: collectors whose contexts have the same key share a body.
// Renders run without the Engine's lock (see renderJobs), so the cache has
// a lock of its own.
type template struct {
	id     string
	t      *configrender.Template
	err    error  // compile error: every render of this Blueprint fails with it
	digest string // of the source; part of every record's input

	mu    sync.Mutex
	byKey map[string]rendered // guarded by mu
}

// rendered is one render: the body, its hash and what it left out, or the
// render error.
type rendered struct {
	hash     string
	body     []byte
	warnings []configrender.Warning
	err      error
}

// compileAll compiles every Blueprint the estate's fleets name, keeping the
// previous template (and its rendered bodies) when its source is unchanged.
func compileAll(bp *blueprint.Estate, ids []string, prev map[string]*template) map[string]*template {
	out := make(map[string]*template, len(ids))
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		tm := &template{id: id, byKey: map[string]rendered{}}
		if bp == nil {
			tm.err = fmt.Errorf("blueprint %s: the estate has no teams/ tree", id)
		} else {
			tm.t, tm.err = configrender.Compile(bp, id, blueprint.GitHistory{})
		}
		if tm.err != nil {
			sum := sha256.Sum256([]byte("error\x00" + tm.err.Error()))
			tm.digest = hex.EncodeToString(sum[:])
		} else {
			sum := sha256.Sum256(tm.t.Source())
			tm.digest = hex.EncodeToString(sum[:])
		}
		if old := prev[id]; old != nil && old.digest == tm.digest {
			tm = old
		}
		out[id] = tm
	}
	return out
}

// inputOf identifies a render: the template's source and the context's key.
func (tm *template) inputOf(in configrender.Input) string {
	h := sha256.New()
	h.Write([]byte(tm.digest))
	h.Write([]byte{0})
	h.Write([]byte(tm.key(in)))
	return hex.EncodeToString(h.Sum(nil))
}

// key is what a render of in depends on ("" for a template that did not
// compile: every render fails alike).
func (tm *template) key(in configrender.Input) string {
	if tm.t == nil {
		return ""
	}
	return tm.t.Key(in)
}

// cached returns the render of key, if one was made.
func (tm *template) cached(key string) (rendered, bool) {
	if tm.err != nil {
		return rendered{err: tm.err}, true
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	r, ok := tm.byKey[key]
	return r, ok
}

// render renders in (whose key is key) and keeps the result, unless a
// render of key was made meanwhile. It takes no lock of the Engine's.
func (tm *template) render(in configrender.Input, key string) rendered {
	if r, ok := tm.cached(key); ok {
		return r
	}
	if testHookRender != nil {
		testHookRender(in)
	}
	var r rendered
	res, err := tm.t.Render(in)
	if err != nil {
		r.err = err
	} else {
		sum := sha256.Sum256(res.Body)
		r.hash, r.body = hex.EncodeToString(sum[:]), res.Body
		for _, d := range res.Dropped {
			r.warnings = append(r.warnings, d.Warning())
		}
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if prev, ok := tm.byKey[key]; ok {
		return prev
	}
	tm.byKey[key] = r
	return r
}

// forget drops the renders whose body used does not name (and every
// render error: they are made again when needed).
func (tm *template) forget(used map[string]bool) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for k, r := range tm.byKey {
		if r.err != nil || !used[r.hash] {
			delete(tm.byKey, k)
		}
	}
}

// testHookRender, when set by a test, runs before each render.
var testHookRender func(configrender.Input)

// renderJob is one render a record needs that no template has cached.
type renderJob struct {
	tm  *template
	in  configrender.Input
	key string
}

// renderJobs makes the renders jobs name, each distinct one once, on up to
// GOMAXPROCS goroutines, without the Engine's lock: a collector's render
// never holds up what the Engine does for the others.
func renderJobs(jobs []renderJob) {
	type id struct {
		tm  *template
		key string
	}
	seen := make(map[id]bool, len(jobs))
	distinct := jobs[:0:0]
	for _, j := range jobs {
		if !seen[id{j.tm, j.key}] {
			seen[id{j.tm, j.key}] = true
			distinct = append(distinct, j)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(distinct))
	if workers <= 1 {
		for _, j := range distinct {
			j.tm.render(j.in, j.key)
		}
		return
	}
	next := make(chan renderJob)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range next {
				j.tm.render(j.in, j.key)
			}
		})
	}
	for _, j := range distinct {
		next <- j
	}
	close(next)
	wg.Wait()
}

// renderMessage is the assignment error of a failed render, naming the
// Blueprint when the error does not already.
func renderMessage(id string, err error) string {
	var re *configrender.Error
	if errors.As(err, &re) {
		return err.Error()
	}
	return fmt.Sprintf("blueprint %s: %v", id, err)
}
