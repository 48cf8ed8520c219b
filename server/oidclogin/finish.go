package oidclogin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/myriarch/myriarch/server/access"
)

// Finish completes attempt a with the provider's answer q (the callback's
// query): the state must be a's, the code is exchanged with a's PKCE
// verifier, the ID token verified (signature against the provider's keys,
// issuer, audience, expiry) and its nonce must be a's. The principal is
// named by the token's verified email, else its preferred_username, else
// its subject, and has what the role claim's values map to. Any other
// outcome is a *Refusal.
func (p *RP) Finish(ctx context.Context, a Attempt, q url.Values) (access.Principal, error) {
	name := p.s.Name
	switch {
	case a.State == "":
		return access.Principal{}, refuse(nil, "no sign-in with %s was begun in this browser, or it took longer than %s; begin again", name, AttemptTTL)
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(a.State)) != 1:
		return access.Principal{}, refuse(nil, "the answer of %s does not belong to the sign-in this browser began (its state differs)", name)
	case q.Get("error") != "":
		return access.Principal{}, refuse(nil, "%s refused the sign-in: %s", name, oauthError(q.Get("error"), q.Get("error_description")))
	case q.Get("code") == "":
		return access.Principal{}, refuse(nil, "%s answered without an authorization code", name)
	}
	prov, err := p.discovered()
	if err != nil {
		return access.Principal{}, refuse(err, "%v", err)
	}
	tok, err := p.config(prov).Exchange(context.WithValue(ctx, oauth2.HTTPClient, p.http), q.Get("code"), oauth2.VerifierOption(a.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			return access.Principal{}, refuse(err, "%s refused the authorization code: %s", name, oauthError(re.ErrorCode, re.ErrorDescription))
		}
		return access.Principal{}, refuse(err, "the authorization code could not be exchanged at %s: %v", name, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return access.Principal{}, refuse(nil, "%s answered without an ID token", name)
	}
	idt, err := prov.Verifier(&oidc.Config{ClientID: p.s.ClientID}).Verify(ctx, raw)
	if err != nil {
		var exp *oidc.TokenExpiredError
		if errors.As(err, &exp) {
			return access.Principal{}, refuse(err, "the ID token of %s expired at %s", name, exp.Expiry.UTC().Format(time.RFC3339))
		}
		return access.Principal{}, refuse(err, "the ID token of %s was refused: %v", name, err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(a.Nonce)) != 1 {
		return access.Principal{}, refuse(nil, "the ID token of %s does not carry the nonce of the sign-in this browser began", name)
	}
	who, values, err := p.claims(idt)
	if err != nil {
		return access.Principal{}, &Refusal{Reason: err.Error(), Name: who, err: err}
	}
	role, fleets := p.s.Roles.Resolve(values)
	if role == access.None {
		return access.Principal{}, &Refusal{Name: who, Reason: fmt.Sprintf("signed in at %s as %s, but none of your %s (%s) maps to a role of myriarchd",
			name, who, p.s.RoleClaim, listed(values))}
	}
	return access.Principal{Name: who, Kind: access.KindOIDC, Role: role, Fleets: fleets}, nil
}

// claims reads who the token names and the values of its role claim (a
// string or a list of strings).
func (p *RP) claims(idt *oidc.IDToken) (string, []string, error) {
	var c map[string]json.RawMessage
	if err := idt.Claims(&c); err != nil {
		return "", nil, fmt.Errorf("the ID token's claims could not be read: %w", err)
	}
	var email, username string
	var verified any
	_ = json.Unmarshal(c["email"], &email)
	_ = json.Unmarshal(c["email_verified"], &verified)
	_ = json.Unmarshal(c["preferred_username"], &username)
	who := idt.Subject
	switch {
	case email != "" && (verified == true || verified == "true"):
		who = email
	case username != "":
		who = username
	}
	raw, ok := c[p.s.RoleClaim]
	if !ok || string(raw) == "null" {
		return who, nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return who, []string{one}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return who, list, nil
	}
	return who, nil, fmt.Errorf("the %s claim of the ID token of %s is neither a string nor a list of strings", p.s.RoleClaim, p.s.Name)
}

// listed names values for a message, the first ten of them.
func listed(values []string) string {
	const shown = 10
	switch {
	case len(values) == 0:
		return "none"
	case len(values) > shown:
		return strings.Join(values[:shown], ", ") + fmt.Sprintf(" and %d more", len(values)-shown)
	}
	return strings.Join(values, ", ")
}

// oauthError is an OAuth error code with its description.
func oauthError(code, desc string) string {
	if desc == "" {
		return code
	}
	return code + " (" + desc + ")"
}
