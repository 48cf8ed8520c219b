package oidcprovider

import (
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// request is an authorization request, from the authorization endpoint
// until its code is exchanged.
type request struct {
	id       string
	req      oidc.AuthRequest
	user     User // set by the login step
	done     bool
	authTime time.Time
}

func (r *request) GetID() string                      { return r.id }
func (r *request) GetACR() string                     { return "" }
func (r *request) GetAMR() []string                   { return []string{"pwd"} }
func (r *request) GetAuthTime() time.Time             { return r.authTime }
func (r *request) GetClientID() string                { return r.req.ClientID }
func (r *request) GetRedirectURI() string             { return r.req.RedirectURI }
func (r *request) GetResponseType() oidc.ResponseType { return r.req.ResponseType }
func (r *request) GetResponseMode() oidc.ResponseMode { return r.req.ResponseMode }
func (r *request) GetScopes() []string                { return r.req.Scopes }
func (r *request) GetState() string                   { return r.req.State }
func (r *request) GetSubject() string                 { return r.user.Subject }
func (r *request) Done() bool                         { return r.done }
func (r *request) GetAudience() []string              { return []string{r.req.ClientID} }
func (r *request) GetNonce() string                   { return r.req.Nonce }

func (r *request) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: r.req.CodeChallenge, Method: r.req.CodeChallengeMethod}
}
