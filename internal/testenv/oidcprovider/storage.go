package oidcprovider

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the provider's state as op keeps it: authorization requests
// and their codes, clients, users and keys. What a code flow does not
// need (refresh tokens, introspection, the userinfo endpoint, JWT
// profiles) is refused.
type storage struct{ p *Provider }

var (
	errNotFound    = errors.New("not found")
	errUnsupported = errors.New("not supported by the test provider")
)

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE with S256 is required")
	}
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &request{id: rand.Text(), req: *req}
	p.requests[r.id] = r
	return r, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.requests[id]
	if !ok {
		return nil, errNotFound
	}
	return r, nil
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.requests[p.codes[code]]
	if !ok {
		return nil, errNotFound
	}
	return r, nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.codes[code] = id
	return nil
}

// DeleteAuthRequest ends a request once its code was exchanged: a code is
// used once.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.requests, id)
	for c, rid := range p.codes {
		if rid == id {
			delete(p.codes, c)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	return rand.Text(), time.Now().Add(idTokenTTL), nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errUnsupported
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errUnsupported
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrInvalidRequest().WithDescription("revocation is not supported by the test provider")
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return signingKey{s.p.keys.published}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.ES256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{&s.p.keys.published.PublicKey}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.clients[id]
	if !ok {
		return nil, errNotFound
	}
	return client{c}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.clients[id]
	if !ok || subtle.ConstantTimeCompare([]byte(secret), []byte(c.Secret)) != 1 {
		return errors.New("wrong client or secret")
	}
	return nil
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest puts the signed-in user's claims in the ID token.
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, _ []string) error {
	r, ok := req.(*request)
	if !ok {
		return errUnsupported
	}
	info.Subject = r.user.Subject
	info.Email, info.EmailVerified = r.user.Email, oidc.Bool(r.user.EmailVerified)
	info.PreferredUsername = r.user.Username
	for k, v := range r.user.Claims {
		info.AppendClaims(k, v)
	}
	return nil
}

func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errUnsupported
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errUnsupported
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errUnsupported
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errUnsupported
}

func (s *storage) Health(context.Context) error { return nil }
