package server

import (
	"github.com/myriarch/myriarch/server/oidclogin"
)

// newOIDC returns the relying party of the OpenID Connect provider the
// console signs operators in with; nil when none is configured. Its
// client secret is read here, so a refused secret file stops the start.
func (s *Server) newOIDC() (*oidclogin.RP, error) {
	if !s.opts.OIDC.Enabled() {
		return nil, nil
	}
	log := s.log.With("component", "oidc")
	secret, err := oidclogin.ReadSecret(s.opts.OIDC.ClientSecretFile, log)
	if err != nil {
		return nil, err
	}
	return oidclogin.New(oidclogin.Options{Settings: s.opts.OIDC, Secret: secret, RedirectURL: s.oidcRedirectURL, Log: log}), nil
}

// oidcRedirectURL is where the provider sends the browser back to: the
// one configured, else the admin listener's callback.
func (s *Server) oidcRedirectURL() string {
	if s.opts.OIDC.RedirectURL != "" {
		return s.opts.OIDC.RedirectURL
	}
	if s.adminLn != nil {
		return oidclogin.DefaultRedirectURL(s.adminLn.Addr().String())
	}
	return oidclogin.DefaultRedirectURL(s.opts.AdminListen)
}
