// Package oidclogin signs console operators in with an OpenID Connect
// provider: myriarchd is the relying party of an authorization code flow
// with PKCE, and the ID token's role claim (groups, by default) is mapped to
// a role of myriarchd, optionally scoped to fleets.
//
// The provider's discovery document is fetched in the background, retried
// with backoff while the provider cannot be reached; meanwhile sign-in with
// it is unavailable and everything else works. A session started this way
// acts with the role mapped at sign-in until it expires (12 hours): a change
// of the operator's groups at the provider, or of the mapping, holds from
// their next sign-in.
package oidclogin
