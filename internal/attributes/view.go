package attributes

import (
	"sort"
	"strings"

	"github.com/open-telemetry/opamp-go/protobufs"
)

// MaxPerList is the most attributes kept from one reported list.
const MaxPerList = 256

// LabelPrefix is the namespace of server labels in the view. Agents may not
// report keys in it.
const LabelPrefix = "labels."

// List is one cleaned attribute list and what was thrown away building it.
type List struct {
	Attrs map[string]string
	// Dropped counts entries beyond MaxPerList.
	Dropped int
	// LabelKeys are reported keys in the labels. namespace that were removed, sorted.
	LabelKeys []string
}

// FromKeyValues cleans one reported list: the first MaxPerList entries are
// kept, keys and values are converted and cleaned, later duplicates win and
// keys in the labels. namespace are removed.
func FromKeyValues(kvs []*protobufs.KeyValue) List {
	l := List{Attrs: make(map[string]string, min(len(kvs), MaxPerList))}
	if len(kvs) > MaxPerList {
		l.Dropped = len(kvs) - MaxPerList
		kvs = kvs[:MaxPerList]
	}
	var labelKeys map[string]struct{}
	for _, kv := range kvs {
		if kv == nil {
			continue
		}
		k := Clean(kv.Key)
		if strings.HasPrefix(k, LabelPrefix) {
			if labelKeys == nil {
				labelKeys = map[string]struct{}{}
			}
			labelKeys[k] = struct{}{}
			continue
		}
		l.Attrs[k] = Clean(String(kv.Value))
	}
	for k := range labelKeys {
		l.LabelKeys = append(l.LabelKeys, k)
	}
	sort.Strings(l.LabelKeys)
	return l
}
