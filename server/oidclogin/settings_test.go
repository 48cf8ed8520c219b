package oidclogin

import (
	"strings"
	"testing"
)

func TestSettingsValidate(t *testing.T) {
	valid := Settings{Issuer: "https://idp.example.com/realms/ops", ClientID: "myriarch", ClientSecretFile: "/etc/myriarch/oidc-secret",
		Roles: Roles{"sre": {Role: "operator"}}}
	with := func(f func(*Settings)) Settings { s := valid; f(&s); return s }
	for _, tc := range []struct {
		name   string
		s      Settings
		listen string // --admin-listen; 127.0.0.1:4321 when ""
		want   []string
	}{
		{"valid", valid, "", nil},
		{"off", Settings{}, "", nil},
		{"http on localhost", with(func(s *Settings) { s.Issuer = "http://localhost:5556/dex" }), "", nil},
		{"http on 127.0.0.1", with(func(s *Settings) { s.Issuer = "http://127.0.0.1:5556" }), "", nil},
		{"http on ::1", with(func(s *Settings) { s.Issuer = "http://[::1]:5556" }), "", nil},
		{"a redirect URL behind a proxy", with(func(s *Settings) { s.RedirectURL = "https://ops.example.com/myriarch/login/oidc/callback" }), ":4321", nil},
		{"http elsewhere", with(func(s *Settings) { s.Issuer = "http://idp.example.com" }), "",
			[]string{`--oidc-issuer "http://idp.example.com": must be https (http only for a provider on this host`}},
		{"another scheme", with(func(s *Settings) { s.Issuer = "ftp://idp.example.com" }), "", []string{`--oidc-issuer "ftp://idp.example.com": must be https`}},
		{"no host", with(func(s *Settings) { s.Issuer = "https:///realm" }), "", []string{"--oidc-issuer", "absolute URL with a host"}},
		{"a query", with(func(s *Settings) { s.Issuer = "https://idp.example.com/?tenant=1" }), "", []string{"--oidc-issuer", "without user, query or fragment"}},
		{"not a URL", with(func(s *Settings) { s.Issuer = "https://idp example.com/%zz" }), "", []string{"--oidc-issuer", "not a URL"}},
		{"no client id", with(func(s *Settings) { s.ClientID = "" }), "", []string{"--oidc-client-id is required with --oidc-issuer"}},
		{"no secret", with(func(s *Settings) { s.ClientSecretFile = "" }), "", []string{"--oidc-client-secret-file is required with --oidc-issuer"}},
		{"no mapping", with(func(s *Settings) { s.Roles = nil }), "", []string{"oidc_roles is empty"}},
		{"an unknown role", with(func(s *Settings) { s.Roles = Roles{"sre": {Role: "superuser"}} }), "", []string{`oidc_roles "sre": unknown role "superuser"`}},
		{"a redirect URL elsewhere than the callback", with(func(s *Settings) { s.RedirectURL = "https://ops.example.com/" }), "",
			[]string{`--oidc-redirect-url "https://ops.example.com/": must end in /login/oidc/callback`}},
		{"a relative redirect URL", with(func(s *Settings) { s.RedirectURL = "/login/oidc/callback" }), "",
			[]string{"--oidc-redirect-url", "absolute http or https URL"}},
		{"no redirect URL for a console on every interface", valid, "0.0.0.0:4321",
			[]string{"--oidc-redirect-url is required: --admin-listen 0.0.0.0:4321 names no host"}},
		{"no redirect URL for a console on an empty host", valid, ":4321", []string{"--oidc-redirect-url is required"}},
		{"a role claim with white space", with(func(s *Settings) { s.RoleClaim = "groups " }), "", []string{`--oidc-role-claim "groups "`}},
		{"settings without an issuer", Settings{ClientID: "x", ClientSecretFile: "/s", Roles: Roles{"a": {Role: "admin"}}}, "",
			[]string{"--oidc-client-id, --oidc-client-secret-file, oidc_roles given without --oidc-issuer"}},
		{"every problem at once", Settings{Issuer: "http://idp.example.com", Roles: Roles{"a": {Role: "boss"}}, RedirectURL: "https://x/"}, "",
			[]string{"--oidc-issuer", "--oidc-client-id is required", "--oidc-client-secret-file is required", "--oidc-redirect-url", `oidc_roles "a": unknown role "boss"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listen := tc.listen
			if listen == "" {
				listen = "127.0.0.1:4321"
			}
			err := tc.s.Validate(listen)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestSettingsDefaults(t *testing.T) {
	s := Settings{}.WithDefaults()
	if s.RoleClaim != "groups" || s.Name != "your provider" {
		t.Fatalf("defaults: %+v", s)
	}
	s = Settings{RoleClaim: "roles", Name: "Keycloak"}.WithDefaults()
	if s.RoleClaim != "roles" || s.Name != "Keycloak" {
		t.Fatalf("given values replaced: %+v", s)
	}
	if u := DefaultRedirectURL("127.0.0.1:4321"); u != "http://127.0.0.1:4321/login/oidc/callback" {
		t.Fatalf("default redirect URL %s", u)
	}
}
