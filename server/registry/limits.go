package registry

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"
)

// What one agent can make the registry hold is bounded: its description
// (beyond the agents specification's 256 attributes per list of 4096-byte keys and values,
// at most MaxDescriptionBytes in all, in memory and in the store), each
// event message (MaxEventMessage) and its history (MaxEvents).

// MaxDescriptionBytes bounds the keys and values kept of one agent's
// description, both lists together. A real collector reports a few KiB.
const MaxDescriptionBytes = 64 << 10

// MaxEventMessage bounds one event message, in bytes.
const MaxEventMessage = 1 << 10

// MaxHealthBytes bounds the health report kept of one agent (encoded).
const MaxHealthBytes = 64 << 10

// boundHealth returns h, or when it is larger than MaxHealthBytes its top
// level alone (the per-component map dropped, texts cut) and a note of it.
func boundHealth(h *protobufs.ComponentHealth) (*protobufs.ComponentHealth, string) {
	size := proto.Size(h)
	if size <= MaxHealthBytes {
		return h, ""
	}
	top := &protobufs.ComponentHealth{
		Healthy: h.Healthy, StartTimeUnixNano: h.StartTimeUnixNano, StatusTimeUnixNano: h.StatusTimeUnixNano,
		LastError: limitMessage(h.LastError), Status: limitMessage(h.Status),
	}
	return top, fmt.Sprintf("health report of %d bytes (%d components) exceeds the limit of %d bytes: only its top level is kept",
		size, len(h.ComponentHealthMap), MaxHealthBytes)
}

// fitDescription drops attributes until the description fits
// MaxDescriptionBytes: the smallest entries are kept first, so one huge
// value cannot push out the ordinary ones. It returns what it dropped.
func fitDescription(id, non map[string]string) (dropped, droppedBytes int) {
	total := mapBytes(id) + mapBytes(non)
	if total <= MaxDescriptionBytes {
		return 0, 0
	}
	type entry struct {
		m    map[string]string
		key  string
		size int
		rank int // identifying before non-identifying on equal sizes
	}
	all := make([]entry, 0, len(id)+len(non))
	for k, v := range id {
		all = append(all, entry{id, k, len(k) + len(v), 0})
	}
	for k, v := range non {
		all = append(all, entry{non, k, len(k) + len(v), 1})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.size != b.size {
			return a.size < b.size
		}
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return a.key < b.key
	})
	kept := 0
	for _, e := range all {
		if kept+e.size <= MaxDescriptionBytes {
			kept += e.size
			continue
		}
		delete(e.m, e.key)
		dropped++
		droppedBytes += e.size
	}
	return dropped, droppedBytes
}

func mapBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// limitMessage cuts an event message to MaxEventMessage bytes on a rune
// boundary, saying how much was left out.
func limitMessage(msg string) string {
	if len(msg) <= MaxEventMessage {
		return msg
	}
	const room = MaxEventMessage - 32 // for the note
	cut := room
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", msg[:cut], len(msg)-cut)
}

// joinLimited joins items with ", " within about MaxEventMessage-len(prefix)
// bytes, each cut to 64 bytes, ending with "… and N more" when they do not
// all fit.
func joinLimited(prefix string, items []string) string {
	var b strings.Builder
	b.WriteString(prefix)
	budget := MaxEventMessage - 40
	for i, it := range items {
		if len(it) > 64 {
			cut := 60
			for cut > 0 && !utf8.RuneStart(it[cut]) {
				cut--
			}
			it = it[:cut] + "…"
		}
		if b.Len()+len(it)+2 > budget {
			fmt.Fprintf(&b, "… and %d more", len(items)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(it)
	}
	return b.String()
}
