package admin

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/myriarch/myriarch/internal/attributes"
)

// appendAgent appends j exactly as WriteJSON's indenting encoder renders it
// when j sits at nesting depth (2 inside {"agents": [...]}). Listing 100 000
// agents through reflection and a re-indenting pass took seconds; this
// writes the same bytes directly; scratch is reused between calls. Decorator fields are few and small, so
// they still go through encoding/json.
func appendAgent(b []byte, j *Agent, depth int, scratch *[]keyValue) []byte {
	o := object{b: b, depth: depth}
	o.begin()
	o.key("instanceUid")
	o.b = appendString(o.b, j.InstanceUID)
	o.key("kind")
	o.b = appendString(o.b, j.Kind)
	o.key("online")
	o.b = appendBool(o.b, j.Online)
	o.key("credential")
	c := object{b: o.b, depth: depth + 1}
	c.begin()
	c.key("kind")
	c.b = appendString(c.b, j.Credential.Kind)
	c.key("id")
	c.b = appendString(c.b, j.Credential.ID)
	c.key("name")
	c.b = appendString(c.b, j.Credential.Name)
	o.b = c.end()
	o.key("identifying")
	if j.lists {
		o.b = appendPart(o.b, j.identifying, depth+1, scratch)
	} else {
		o.b = appendStringMap(o.b, j.Identifying, depth+1, scratch)
	}
	o.key("nonIdentifying")
	if j.lists {
		o.b = appendPart(o.b, j.nonIdentifying, depth+1, scratch)
	} else {
		o.b = appendStringMap(o.b, j.NonIdentifying, depth+1, scratch)
	}
	o.key("attributes")
	if j.lists {
		o.b = appendEntries(o.b, j.attrs.AppendTo((*scratch)[:0]), depth+1, scratch)
	} else {
		o.b = appendStringMap(o.b, j.Attributes, depth+1, scratch)
	}
	o.key("labels")
	o.b = appendStringMap(o.b, j.Labels, depth+1, scratch)
	o.key("capabilities")
	o.b = appendStrings(o.b, j.Capabilities, depth+1)
	o.key("health")
	o.b = appendHealth(o.b, j.Health, depth+1)
	o.key("firstSeen")
	o.b = appendTime(o.b, j.FirstSeen)
	o.key("lastSeen")
	o.b = appendTime(o.b, j.LastSeen)
	o.key("events")
	o.b = appendEvents(o.b, j.Events, depth+1)
	if j.Updater != nil {
		o.key("updater")
		o.b = appendUpdater(o.b, j.Updater, depth+1)
	}
	o.key("pairing")
	o.b = appendAny(o.b, j.Pairing, depth+1)
	o.key("assignment")
	o.b = appendAny(o.b, j.Assignment, depth+1)
	o.key("offer")
	o.b = appendAny(o.b, j.Offer, depth+1)
	if j.Telemetry != nil { // omitempty
		o.key("telemetry")
		o.b = appendAny(o.b, j.Telemetry, depth+1)
	}
	if j.Keyring != nil { // omitempty
		o.key("keyring")
		o.b = appendAny(o.b, j.Keyring, depth+1)
	}
	if len(j.LabelSources) > 0 { // omitempty
		o.key("labelSources")
		o.b = appendStringMap(o.b, j.LabelSources, depth+1, scratch)
	}
	return o.end()
}

// object writes one indented JSON object whose braces sit at depth.
type object struct {
	b     []byte
	depth int
	n     int
}

func (o *object) begin() { o.b = append(o.b, '{') }

// key starts a member; names are plain ASCII and need no escaping.
func (o *object) key(name string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = newline(o.b, o.depth+1)
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, '"', ':', ' ')
}

func (o *object) end() []byte {
	if o.n > 0 {
		o.b = newline(o.b, o.depth)
	}
	return append(o.b, '}')
}

const spaces = "                                                                "

func newline(b []byte, depth int) []byte {
	b = append(b, '\n')
	for n := 2 * depth; n > 0; n -= len(spaces) {
		b = append(b, spaces[:min(n, len(spaces))]...)
	}
	return b
}

func indentOf(depth int) string {
	if 2*depth <= len(spaces) {
		return spaces[:2*depth]
	}
	return strings.Repeat(" ", 2*depth)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendString quotes s exactly as encoding/json does with HTML escaping
// (its default): \" \\ \b \f \n \r \t, other control characters and < > &
// as \u00XX, U+2028 and U+2029 as \u2028 and \u2029, invalid UTF-8 as
// \ufffd; everything else is copied.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

func appendTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

type keyValue = attributes.KeyValue

// appendStringMap writes m as an object, sorted by key.
func appendStringMap(b []byte, m map[string]string, depth int, scratch *[]keyValue) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	kvs := (*scratch)[:0]
	for k, v := range m {
		kvs = append(kvs, keyValue{Key: k, Value: v})
	}
	return appendEntries(b, kvs, depth, scratch)
}

// appendPart writes one reported list as an object, as appendStringMap
// writes a map.
func appendPart(b []byte, p attributes.Part, depth int, scratch *[]keyValue) []byte {
	return appendEntries(b, p.AppendTo((*scratch)[:0]), depth, scratch)
}

// appendEntries writes kvs (in scratch's array) as an object, sorted by key.
func appendEntries(b []byte, kvs []keyValue, depth int, scratch *[]keyValue) []byte {
	slices.SortFunc(kvs, func(x, y keyValue) int { return strings.Compare(x.Key, y.Key) })
	*scratch = kvs
	o := object{b: b, depth: depth}
	o.begin()
	for _, kv := range kvs {
		if o.n > 0 {
			o.b = append(o.b, ',')
		}
		o.n++
		o.b = newline(o.b, depth+1)
		o.b = appendString(o.b, kv.Key)
		o.b = append(o.b, ':', ' ')
		o.b = appendString(o.b, kv.Value)
	}
	return o.end()
}

func appendStrings(b []byte, s []string, depth int) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = newline(b, depth+1)
		b = appendString(b, v)
	}
	if len(s) > 0 {
		b = newline(b, depth)
	}
	return append(b, ']')
}

func appendHealth(b []byte, h *Health, depth int) []byte {
	if h == nil {
		return append(b, "null"...)
	}
	o := object{b: b, depth: depth}
	o.begin()
	o.key("healthy")
	o.b = appendBool(o.b, h.Healthy)
	o.key("status")
	o.b = appendString(o.b, h.Status)
	o.key("lastError")
	o.b = appendString(o.b, h.LastError)
	o.key("startTime")
	o.b = appendTimePtr(o.b, h.StartTime)
	o.key("statusTime")
	o.b = appendTimePtr(o.b, h.StatusTime)
	if len(h.Components) > 0 {
		o.key("components")
		keys := make([]string, 0, len(h.Components))
		for k := range h.Components {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, strings.Compare)
		m := object{b: o.b, depth: depth + 1}
		m.begin()
		for _, k := range keys {
			if m.n > 0 {
				m.b = append(m.b, ',')
			}
			m.n++
			m.b = newline(m.b, depth+2)
			m.b = appendString(m.b, k)
			m.b = append(m.b, ':', ' ')
			m.b = appendHealth(m.b, h.Components[k], depth+2)
		}
		o.b = m.end()
	}
	return o.end()
}

func appendEvents(b []byte, evs []Event, depth int) []byte {
	if evs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = newline(b, depth+1)
		o := object{b: b, depth: depth + 1}
		o.begin()
		o.key("time")
		o.b = appendTime(o.b, evs[i].Time)
		o.key("type")
		o.b = appendString(o.b, evs[i].Type)
		o.key("message")
		o.b = appendString(o.b, evs[i].Message)
		b = o.end()
	}
	if len(evs) > 0 {
		b = newline(b, depth)
	}
	return append(b, ']')
}

func appendUpdater(b []byte, u *Updater, depth int) []byte {
	o := object{b: b, depth: depth}
	o.begin()
	o.key("installMode")
	o.b = appendStringPtr(o.b, u.InstallMode)
	o.key("serverEndpoint")
	o.b = appendStringPtr(o.b, u.ServerEndpoint)
	o.key("supervisorService")
	o.b = appendStringPtr(o.b, u.SupervisorService)
	o.key("collectorInstanceUid")
	o.b = appendStringPtr(o.b, u.CollectorInstanceUID)
	o.key("imageVersion")
	o.b = appendStringPtr(o.b, u.ImageVersion)
	if u.ImageDigest != nil {
		o.key("imageDigest")
		o.b = appendString(o.b, *u.ImageDigest)
	}
	return o.end()
}

// FieldWriter is a decorator value that renders its own members, so a
// listing of many agents needs no reflection for it. WriteFields must write
// exactly the members, in the order and form, encoding/json would.
type FieldWriter interface {
	WriteFields(o *Object)
}

// appendAny renders a decorator's value as encoding/json indented for its
// depth would: FieldWriters directly, anything else through encoding/json.
func appendAny(b []byte, v any, depth int) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	if fw, ok := v.(FieldWriter); ok {
		w := Object{object{b: b, depth: depth}}
		w.o.begin()
		fw.WriteFields(&w)
		return w.o.end()
	}
	out, err := json.MarshalIndent(v, indentOf(depth), "  ")
	if err != nil {
		// WriteJSON would have failed the whole response; one agent's
		// unencodable decoration shows as null instead.
		return append(b, "null"...)
	}
	return append(b, out...)
}

// AppendIndented appends v as json.MarshalIndent(v, prefix, "  ") does with
// a prefix of 2·depth spaces (the form of a value nested depth levels deep
// in an admin API response).
func AppendIndented(b []byte, v any, depth int) []byte { return appendAny(b, v, depth) }

// Object writes the members of a FieldWriter.
type Object struct{ o object }

// String writes a string member.
func (w *Object) String(key, v string) {
	w.o.key(key)
	w.o.b = appendString(w.o.b, v)
}

// StringPtr writes a string member, null when v is nil.
func (w *Object) StringPtr(key string, v *string) {
	w.o.key(key)
	w.o.b = appendStringPtr(w.o.b, v)
}

// Strings writes a string array member (null when v is nil).
func (w *Object) Strings(key string, v []string) {
	w.o.key(key)
	w.o.b = appendStrings(w.o.b, v, w.o.depth+1)
}

// Time writes a time member.
func (w *Object) Time(key string, v time.Time) {
	w.o.key(key)
	w.o.b = appendTime(w.o.b, v)
}

// Any writes a member through encoding/json (or its own FieldWriter).
func (w *Object) Any(key string, v any) {
	w.o.key(key)
	w.o.b = appendAny(w.o.b, v, w.o.depth+1)
}
