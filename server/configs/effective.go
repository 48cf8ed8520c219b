package configs

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"sync"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// Whether the collector runs the configuration it reports APPLIED.
//
// The Supervisor (v0.149) can report APPLIED for a remote configuration and
// still run the collector without it: a configuration that arrives while
// it starts is overwritten by its start-up composition. The effective
// configuration comes from the collector itself (its opamp extension), so
// the engine checks it holds every component and pipeline the desired
// configuration defines; when it does not, the configuration is pending,
// not in sync, and is sent again.
//
// An effective configuration is read once per hash, whichever collector
// reports it (a fleet's collectors report the same one), outside the
// Engine's lock, and only up to MaxEffective bytes.

// MaxEffective bounds an effective configuration the engine reads; a
// larger one is not read (an event says so) and counts as effective.
const MaxEffective = 4 << 20

// maxDefinedCached bounds the hashes whose ids definedCache keeps.
const maxDefinedCached = 4096

// effective is what the engine takes from a reported effective
// configuration: its hash and what it defines.
type effective struct {
	hash string
	size int
	ids  []string
	ok   bool // ids were read
}

// definedCache keeps what bodies define, by hash (a desired body's hash is
// that of the effective configuration that holds exactly it). Safe for
// concurrent use.
type definedCache struct {
	mu    sync.Mutex
	byKey map[string]defined // guarded by mu
	order []string           // hashes, oldest first; guarded by mu
}

type defined struct {
	ids []string
	ok  bool
}

func newDefinedCache() *definedCache { return &definedCache{byKey: map[string]defined{}} }

// of returns what body, whose hash is hash, defines, reading it on a miss
// without the cache's lock.
func (c *definedCache) of(hash string, body []byte) ([]string, bool) {
	c.mu.Lock()
	d, hit := c.byKey[hash]
	c.mu.Unlock()
	if hit {
		return d.ids, d.ok
	}
	d.ids, d.ok = definedIDs(body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[hash]; !ok {
		c.byKey[hash] = d
		c.order = append(c.order, hash)
		if len(c.order) > maxDefinedCached {
			delete(c.byKey, c.order[0])
			c.order = c.order[1:]
		}
	}
	return d.ids, d.ok
}

// readEffective hashes a reported effective configuration and reads what
// it defines (at most MaxEffective bytes). It takes no lock of the
// Engine's.
func (e *Engine) readEffective(m *protobufs.AgentConfigMap) *effective {
	ef := &effective{hash: effectiveHash(m)}
	for _, f := range m.GetConfigMap() {
		ef.size += len(f.GetBody())
	}
	if ef.hash == "" || ef.size > MaxEffective {
		return ef
	}
	ef.ids, ef.ok = e.defined.of(ef.hash, effectiveBody(m))
	return ef
}

// effectiveBody joins an effective configuration's files in name order.
func effectiveBody(m *protobufs.AgentConfigMap) []byte {
	files := m.GetConfigMap()
	if len(files) == 1 {
		for _, f := range files {
			return f.GetBody()
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var body []byte
	for _, n := range names {
		body = append(body, files[n].GetBody()...)
		body = append(body, '\n')
	}
	return body
}

// missing returns the ids of the desired body (want, as read by
// definedCache) that the effective configuration lacks: nil when it has
// them all or either cannot be read.
func missing(want []string, wantOK bool, ef *effective) []string {
	if !wantOK || !ef.ok {
		return nil
	}
	var out []string
	for _, id := range want {
		if _, found := sort.Find(len(ef.ids), func(i int) int { return strings.Compare(id, ef.ids[i]) }); !found {
			out = append(out, id)
		}
	}
	return out
}

// effectiveHash is the SHA-256 of the effective config: of its one body,
// or of every name and body in name order when there are several.
func effectiveHash(m *protobufs.AgentConfigMap) string {
	files := m.GetConfigMap()
	if len(files) == 0 {
		return ""
	}
	if len(files) == 1 {
		for _, f := range files {
			sum := sha256.Sum256(f.GetBody())
			return hex.EncodeToString(sum[:])
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(files[n].GetBody())
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
