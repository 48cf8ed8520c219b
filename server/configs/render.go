package configs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/configrender"
)

// template is a compiled Blueprint with the bodies it rendered so far, by
// context key: collectors whose contexts have the same key share a body.
type template struct {
	id     string
	t      *configrender.Template
	err    error  // compile error: every render of this Blueprint fails with it
	digest string // of the source; part of every record's input
	byKey  map[string]string
}

// compileAll compiles every Blueprint the estate's fleets name, keeping the
// previous template (and its rendered bodies) when its source is unchanged.
func compileAll(bp *blueprint.Estate, ids []string, prev map[string]*template) map[string]*template {
	out := make(map[string]*template, len(ids))
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		tm := &template{id: id, byKey: map[string]string{}}
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
	key := ""
	if tm.t != nil {
		key = tm.t.Key(in)
	}
	h := sha256.New()
	h.Write([]byte(tm.digest))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
}

// render returns the body's hash for ctx, rendering it when no collector
// with an equal context key rendered it before; store keeps new bodies.
func (tm *template) render(in configrender.Input, store func(hash string, body []byte)) (string, error) {
	if tm.err != nil {
		return "", tm.err
	}
	key := tm.t.Key(in)
	if h, ok := tm.byKey[key]; ok {
		return h, nil
	}
	res, err := tm.t.Render(in)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(res.Body)
	h := hex.EncodeToString(sum[:])
	store(h, res.Body)
	tm.byKey[key] = h
	return h, nil
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
