package estate

import (
	"fmt"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/server/tokens"
)

// InventoryEntry attaches labels to one agent (by instance UID) or to every
// agent enrolled with a token (by token name).
type InventoryEntry struct {
	InstanceUID uuid.UUID
	Token       string
	Labels      map[string]string
	File        string
	Line        int
}

type inventoryItem struct {
	InstanceUID string            `yaml:"instanceUid"`
	Token       string            `yaml:"token"`
	Labels      map[string]string `yaml:"labels"`
}

func loadInventory(ps *problems, dir string) []InventoryEntry {
	var out []InventoryEntry
	seenUID := map[uuid.UUID]string{}
	seenToken := map[string]string{}
	for _, path := range yamlFiles(ps, dir) {
		data, root, ok := parseFile(ps, path)
		if !ok {
			continue
		}
		if root.Kind != yaml.SequenceNode {
			ps.add(path, root.Line, "an inventory file is a list of {instanceUid|token, labels}")
			continue
		}
		var items []inventoryItem
		if !decodeStrict(ps, path, data, &items) {
			continue
		}
		for i, it := range items {
			line := root.Content[i].Line
			where := fmt.Sprintf("%s:%d", path, line)
			e := InventoryEntry{Token: it.Token, Labels: it.Labels, File: path, Line: line}
			switch {
			case it.InstanceUID != "" && it.Token != "":
				ps.add(path, line, "entry %d: set instanceUid or token, not both", i+1)
				continue
			case it.InstanceUID == "" && it.Token == "":
				ps.add(path, line, "entry %d: needs instanceUid or token", i+1)
				continue
			case it.InstanceUID != "":
				u, err := uuid.Parse(it.InstanceUID)
				if err != nil {
					ps.add(path, line, "entry %d: instanceUid %q is not a UUID", i+1, it.InstanceUID)
					continue
				}
				if prev, dup := seenUID[u]; dup {
					ps.add(path, line, "entry %d: instanceUid %s already has labels at %s", i+1, u, prev)
					continue
				}
				seenUID[u] = where
				e.InstanceUID = u
			default:
				if prev, dup := seenToken[it.Token]; dup {
					ps.add(path, line, "entry %d: token %q already has labels at %s", i+1, it.Token, prev)
					continue
				}
				seenToken[it.Token] = where
			}
			if err := tokens.ValidateLabels(it.Labels); err != nil {
				ps.add(path, line, "entry %d: %v", i+1, err)
				continue
			}
			out = append(out, e)
		}
	}
	return out
}
