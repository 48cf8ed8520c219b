package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/backpressure"
	"github.com/myriarch/myriarch/server/oidclogin"
)

// oidcCookie keeps a sign-in with the provider between its start and the
// provider's answer. SameSite=Lax: the answer is a top-level navigation
// from the provider's site, on which a Strict cookie is not sent.
const oidcCookie = "myriarch_oidc"

// maxOIDCNext bounds the page a sign-in goes on to, which its cookie
// carries: a longer one goes to the overview rather than past what a
// browser keeps of a cookie.
const maxOIDCNext = 1024

// oidcButton is the login page's button of the provider.
type oidcButton struct {
	Name string
	Href string
	// Unavailable says why sign-in with the provider cannot begin now.
	Unavailable string
}

// oidcButton returns the login page's button, nil without a provider.
func (c *Console) oidcButton(next string) *oidcButton {
	rp := c.opts.OIDC
	if rp == nil {
		return nil
	}
	b := &oidcButton{Name: rp.Name(), Href: "/login/oidc?next=" + url.QueryEscape(next)}
	if err := rp.Available(); err != nil {
		b.Unavailable = err.Error()
	}
	return b
}

// oidcBegin answers GET /login/oidc: a sign-in with the provider begins,
// its state, nonce and PKCE verifier kept in a cookie of this browser, and
// the browser goes on to the provider.
func (c *Console) oidcBegin(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	rp := c.opts.OIDC
	if rp == nil {
		c.showLogin(w, r, http.StatusNotFound, loginData{CSRF: secret(), Next: next, Bad: true,
			Message: "Sign-in with an OpenID Connect provider is not configured."})
		return
	}
	if _, ok := c.session(r); ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if len(next) > maxOIDCNext {
		next = "/"
	}
	a, authURL, err := rp.Begin(next)
	if err != nil {
		c.showLogin(w, r, http.StatusServiceUnavailable, loginData{CSRF: secret(), Next: next, Bad: true, Message: err.Error() + "."})
		return
	}
	c.setOIDCCookie(w, r, a.Encode(), int(oidclogin.AttemptTTL.Seconds()))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, authURL, http.StatusSeeOther)
}

// oidcCallback answers GET /login/oidc/callback, the provider's answer:
// checked against this browser's attempt, which it ends, it signs the
// operator in; a refusal is shown with its reason, audited and logged.
func (c *Console) oidcCallback(w http.ResponseWriter, r *http.Request) {
	rp := c.opts.OIDC
	if rp == nil {
		c.showLogin(w, r, http.StatusNotFound, loginData{CSRF: secret(), Next: "/", Bad: true,
			Message: "Sign-in with an OpenID Connect provider is not configured."})
		return
	}
	var a oidclogin.Attempt
	if ck, err := r.Cookie(oidcCookie); err == nil {
		a = oidclogin.ParseAttempt(ck.Value)
	}
	c.setOIDCCookie(w, r, "", -1)
	next := safeNext(a.Next)
	who, err := rp.Finish(r.Context(), a, r.URL.Query())
	if err != nil {
		c.refuseOIDC(w, r, next, err)
		return
	}
	if !c.startSession(w, r, who, "OpenID Connect ("+rp.Name()+")", next) {
		return
	}
	// Not a redirect: the browser came here from the provider's site, and
	// sends the SameSite=Strict session cookie on no request of a redirect
	// chain that crossed sites. A page of the console's own goes on to next.
	w.Header().Set("Cache-Control", "no-store")
	c.render(w, r, http.StatusOK, "signed-in", view{Title: "Signed in", Refresh: next,
		Data: signedIn{Who: who.Name, Role: who.Role.String(), Next: next}})
}

// signedIn is the page a sign-in with the provider ends on.
type signedIn struct {
	Who, Role, Next string
}

// refuseOIDC answers a refused sign-in with the provider: the login page
// with the reason, one audit record and one log line — within the
// source's budget of failed logins; past it, 429.
func (c *Console) refuseOIDC(w http.ResponseWriter, r *http.Request, next string, err error) {
	src := backpressure.SourceKey(r.RemoteAddr)
	if !c.logins.Allow(src) {
		c.refuseLogin(w, r, src, next)
		return
	}
	var ref *oidclogin.Refusal
	if !errors.As(err, &ref) {
		ref = &oidclogin.Refusal{Reason: err.Error()}
	}
	c.log.Warn("console sign-in with the OpenID Connect provider refused", "remote", r.RemoteAddr, "name", ref.Name, "reason", ref.Reason)
	who := access.Principal{Name: ref.Name, Kind: access.KindOIDC}
	msg := "Sign-in refused: " + ref.Reason + "."
	if aerr := c.auditLogin(r, who, ref.Name != "", admin.OutcomeDenied, "OpenID Connect: "+ref.Reason); aerr != nil {
		msg += " (The audit trail could not record this refusal: " + aerr.Error() + ")"
	}
	status := http.StatusUnauthorized
	if ref.Name != "" { // who it is is known; what it may do is not
		status = http.StatusForbidden
	}
	c.showLogin(w, r, status, loginData{CSRF: secret(), Next: next, Bad: true, Message: msg})
}

// setOIDCCookie sets (maxAge > 0) or clears the attempt's cookie, which only
// the sign-in's two routes see. It is Secure over TLS, or when the
// provider sends the browser back to an https URL (TLS ending in front of
// myriarchd).
func (c *Console) setOIDCCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: value, Path: "/login/oidc", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || strings.HasPrefix(c.opts.OIDC.RedirectURL(), "https:")})
}
