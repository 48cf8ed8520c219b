// Package credentials decides who an agent is before any OpAMP traffic: it
// keeps the enrollment-token book (an in-memory cache over the store) and
// turns an HTTP request's bearer token or verified client certificate into a
// store.Credential.
package credentials

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/myriarch/myriarch/server/store"
	"github.com/myriarch/myriarch/server/tokens"
)

// Credential kinds.
const (
	KindToken       = "token"
	KindCertificate = "certificate"
)

// ErrUnauthorized means the request carries no valid credential.
var ErrUnauthorized = errors.New("no valid credential")

// InvalidError is a token request that breaks the rules; Err joins every violation.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// Book is the set of enrollment tokens. It is safe for concurrent use.
type Book struct {
	st  store.Tokens
	now func() time.Time

	mu   sync.RWMutex
	byID map[string]tokens.Token
}

// Open loads every token from st.
func Open(ctx context.Context, st store.Tokens) (*Book, error) {
	list, err := st.ListTokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("load tokens: %w", err)
	}
	b := &Book{st: st, now: time.Now, byID: make(map[string]tokens.Token, len(list))}
	for _, t := range list {
		b.byID[t.ID] = t
	}
	return b, nil
}

// Create validates and stores a new token; the secret is returned once.
func (b *Book) Create(ctx context.Context, name string, labels map[string]string) (tokens.Token, string, error) {
	if err := errors.Join(tokens.ValidateName(name), tokens.ValidateLabels(labels)); err != nil {
		return tokens.Token{}, "", &InvalidError{Err: err}
	}
	t, secret, err := tokens.New(name, labels, b.now())
	if err != nil {
		return tokens.Token{}, "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, o := range b.byID {
		if o.Name == name {
			return tokens.Token{}, "", fmt.Errorf("token name %q: %w", name, store.ErrConflict)
		}
	}
	if err := b.st.InsertToken(ctx, t); err != nil {
		return tokens.Token{}, "", err
	}
	b.byID[t.ID] = t
	return t, secret, nil
}

// Revoke marks a token revoked; later connections with it are refused.
func (b *Book) Revoke(ctx context.Context, id string) (tokens.Token, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.byID[id]
	if !ok {
		return tokens.Token{}, fmt.Errorf("token %s: %w", id, store.ErrNotFound)
	}
	if t.Revoked() {
		return t, nil
	}
	now := b.now().UTC()
	if err := b.st.RevokeToken(ctx, id, now); err != nil {
		return tokens.Token{}, err
	}
	t.RevokedAt = &now
	b.byID[id] = t
	return t, nil
}

// List returns every token (revoked ones too), oldest first.
func (b *Book) List() []tokens.Token {
	b.mu.RLock()
	out := make([]tokens.Token, 0, len(b.byID))
	for _, t := range b.byID {
		out = append(out, t)
	}
	b.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// TokenName implements registry.TokenInfo.
func (b *Book) TokenName(id string) string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.byID[id].Name
}

// TokenLabels implements registry.TokenInfo.
func (b *Book) TokenLabels(id string) map[string]string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.byID[id].Labels
}

// Verify checks a presented secret.
func (b *Book) Verify(secret string) (tokens.Token, error) {
	id, ok := tokens.IDOf(secret)
	if !ok {
		return tokens.Token{}, fmt.Errorf("%w: malformed token", ErrUnauthorized)
	}
	b.mu.RLock()
	t, ok := b.byID[id]
	b.mu.RUnlock()
	switch {
	case !ok || !t.Matches(secret):
		return tokens.Token{}, fmt.Errorf("%w: unknown token", ErrUnauthorized)
	case t.Revoked():
		return tokens.Token{}, fmt.Errorf("%w: token %s is revoked", ErrUnauthorized, id)
	}
	return t, nil
}

// Authenticate returns the credential of an agent's request: its bearer token
// when it sends one (a bad token is refused even with a certificate), else
// the subject of its verified client certificate.
func (b *Book) Authenticate(r *http.Request) (store.Credential, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, secret, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return store.Credential{}, fmt.Errorf("%w: Authorization is not a Bearer token", ErrUnauthorized)
		}
		t, err := b.Verify(strings.TrimSpace(secret))
		if err != nil {
			return store.Credential{}, err
		}
		return store.Credential{Kind: KindToken, ID: t.ID}, nil
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		return store.Credential{Kind: KindCertificate, ID: r.TLS.PeerCertificates[0].Subject.String()}, nil
	}
	return store.Credential{}, fmt.Errorf("%w: no bearer token and no verified client certificate", ErrUnauthorized)
}
