package selfupdate

import (
	"encoding/json"
	"fmt"

	"github.com/myriarch/myriarch/agent/journal"
)

func writePending(path string, p *Pending) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("selfupdate: %w", err)
	}
	return journal.WriteFile(path, append(data, '\n'), 0o600)
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
