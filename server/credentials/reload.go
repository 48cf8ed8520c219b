package credentials

import (
	"context"
	"fmt"

	"github.com/myriarch/myriarch/server/tokens"
)

// Reload reads every token from the store again (another instance sharing
// it created or revoked some) and returns the tokens revoked since the
// book last knew them, so their agents can be disconnected.
func (b *Book) Reload(ctx context.Context) ([]tokens.Token, error) {
	list, err := b.st.ListTokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("reload tokens: %w", err)
	}
	byID := make(map[string]tokens.Token, len(list))
	for _, t := range list {
		byID[t.ID] = t
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var revoked []tokens.Token
	for id, t := range byID {
		if old, ok := b.byID[id]; t.Revoked() && (!ok || !old.Revoked()) {
			revoked = append(revoked, t)
		}
	}
	b.byID = byID
	return revoked, nil
}
