package console

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/backpressure"
)

const (
	// Failed logins per source address (an IPv4 address or an IPv6 /64):
	// loginBurst at once, then one per loginRefill; past that a failed
	// login is answered 429 (see login).
	loginBurst  = 10
	loginRefill = 6 * time.Second

	sessionCookie = "myriarch_console"
	loginCookie   = "myriarch_login" // CSRF of the login form, before a session exists
	maxFormBytes  = 64 << 10
)

// pageHandler is a console page or action with its operator's session.
type pageHandler func(w http.ResponseWriter, r *http.Request, s *session)

// session returns the request's live session.
func (c *Console) session(r *http.Request) (*session, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, false
	}
	return c.sessions.get(r.Context(), ck.Value)
}

// dropStale clears the session cookie r carries when the session it names
// has ended (logged out, perhaps by a logout whose answer the browser
// dropped for a navigation of its own, or expired): the browser keeps no
// cookie of a session that is no more. One the store cannot be asked about
// stays.
func (c *Console) dropStale(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(sessionCookie); err == nil && c.sessions.gone(r.Context(), ck.Value) {
		clearCookie(w, r, sessionCookie, "/")
	}
}

// rule returns pattern's rule of access.Rules and records the route; a
// route without a rule fails at start.
func (c *Console) rule(pattern string) access.Rule {
	r, ok := access.Rules[pattern]
	if !ok {
		panic("console: route " + pattern + " has no rule in access.Rules")
	}
	c.patterns = append(c.patterns, pattern)
	return r
}

// Patterns lists the console's routes, in the order they were registered.
func (c *Console) Patterns() []string { return append([]string(nil), c.patterns...) }

// public serves h to anyone.
func (c *Console) public(pattern string, h http.HandlerFunc) {
	c.rule(pattern)
	c.mux.HandleFunc(pattern, h)
}

// page serves h to a logged-in operator whose principal the rule allows;
// others go to the login page, which brings them back here.
func (c *Console) page(pattern string, h pageHandler) { c.read(pattern, h, true) }

// live serves h, a live stream, to a logged-in operator whose principal
// the rule allows; others get 401.
func (c *Console) live(pattern string, h pageHandler) { c.read(pattern, h, false) }

func (c *Console) read(pattern string, h pageHandler, toLogin bool) {
	rule := c.rule(pattern)
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.session(r)
		if !ok {
			c.dropStale(w, r)
		}
		switch {
		case !ok && toLogin:
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		case !ok:
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if r, ok = c.allowed(w, r, s, rule); ok {
			h(w, r, s)
		}
	})
}

// action serves a state-changing request: a session whose principal the
// rule allows, a request from the console's own pages (Sec-Fetch-Site,
// when the browser sends it) and the session's CSRF token in the form are
// all required.
func (c *Console) action(pattern string, h pageHandler) {
	rule := c.rule(pattern)
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.session(r)
		if !ok {
			c.dropStale(w, r)
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		}
		if !sameOrigin(r) {
			http.Error(w, "cross-site request refused", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "form too large or malformed", http.StatusBadRequest)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
			http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if r, ok = c.allowed(w, r, s, rule); ok {
			h(w, r, s)
		}
	})
}

// allowed checks s's principal against rule: refused, the request is
// audited and answered 403; allowed, it goes on carrying the session's
// caller, which the admin API requests it makes act as.
func (c *Console) allowed(w http.ResponseWriter, r *http.Request, s *session, rule access.Rule) (*http.Request, bool) {
	fleet := ""
	switch rule.Scope {
	case access.Fleet:
		fleet = r.PathValue("name")
	case access.Agent:
		if uid, err := uuid.Parse(r.PathValue("uid")); err == nil {
			fleet = c.opts.API.FleetOfAgent(uid)
		}
	}
	if d := access.Check(s.who, rule, fleet); !d.Allowed {
		action := rule.Action
		if action == "" {
			action = "read " + r.Pattern
		}
		err := c.opts.API.Record(r.Context(), admin.AuditEntry{Actor: s.who.Actor(), Role: s.who.Role.String(), Via: access.ViaConsole,
			Action: action, Target: admin.TargetOf(r), Source: admin.SourceOf(r), Outcome: admin.OutcomeDenied, Detail: d.Reason})
		msg := "Your role cannot do this: " + d.Reason + "."
		if err != nil {
			msg += " (The audit trail could not record this refusal: " + err.Error() + ")"
		}
		c.fail(w, r, s, http.StatusForbidden, msg)
		return r, false
	}
	return r.WithContext(access.WithCaller(r.Context(), access.Caller{Principal: s.who, Via: access.ViaConsole})), true
}

// sameOrigin refuses requests a browser marks as coming from another site.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: int(maxAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

func clearCookie(w http.ResponseWriter, r *http.Request, name, path string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: path, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// safeNext keeps a post-login destination on this console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return u.RequestURI()
}

type loginData struct {
	CSRF    string
	Next    string
	Message string
	Bad     bool
	// OIDC is the provider's button (nil without one).
	OIDC *oidcButton
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.session(r); ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.dropStale(w, r)
	d := loginData{CSRF: secret(), Next: safeNext(r.URL.Query().Get("next"))}
	if r.URL.Query().Has("out") {
		d.Message = "Logged out."
	}
	c.showLogin(w, r, http.StatusOK, d)
}

func (c *Console) showLogin(w http.ResponseWriter, r *http.Request, status int, d loginData) {
	d.OIDC = c.oidcButton(d.Next)
	setCookie(w, r, loginCookie, d.CSRF, "/login", time.Hour)
	w.Header().Set("Cache-Control", "no-store")
	c.render(w, r, status, "login", view{Title: "Log in", Data: d})
}

// login signs an operator in: a user with a password, the admin token,
// or a one-time login link's secret (oidcCallback signs in with the
// provider). Every login, and every refused one within the source's
// budget, is audited.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "form too large or malformed", http.StatusBadRequest)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	ck, err := r.Cookie(loginCookie)
	if err != nil || !sameOrigin(r) || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostForm.Get("csrf"))) != 1 || ck.Value == "" {
		c.showLogin(w, r, http.StatusForbidden, loginData{CSRF: secret(), Next: next, Bad: true,
			Message: "The login form expired or came from elsewhere; try again."})
		return
	}
	// The budget of failures does not keep a secret from being guessed:
	// the admin token has at least 32 characters and a login link's secret
	// 256 bits, beyond any guessing over the network, and a password check
	// takes tens of milliseconds. It bounds what a flood of wrong secrets
	// costs — past it each one gets a 429 telling its sender to back off,
	// logged once a minute per source, not a line per request. So the
	// right secret logs in whatever its source's budget (behind a reverse
	// proxy every operator shares one source address, and one flooding it
	// must not lock the others out), and gives its source the whole budget
	// back.
	src := backpressure.SourceKey(r.RemoteAddr)
	name := strings.TrimSpace(r.PostForm.Get("name"))
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	var who access.Principal
	how, why := "", "wrong token, or a login link that was used or expired"
	switch {
	case name != "":
		how, why = "password", "wrong user name or password"
		if p, err := c.opts.Users.SignIn(r.Context(), name, r.PostForm.Get("password")); err == nil {
			who = p
		}
	case tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(c.opts.AdminToken)) == 1:
		how, who = "admin token", access.Principal{Name: access.AdminTokenName, Kind: access.KindAdminToken, Role: access.Admin}
	case tok != "":
		how = "login link"
		if p, ok := c.sessions.useLink(r.Context(), tok); ok {
			who = p
		}
	}
	if who.Role == access.None {
		if !c.logins.Allow(src) { // a failed guess spends the source's budget
			c.refuseLogin(w, r, src, next)
			return
		}
		c.log.Warn("console login refused", "remote", r.RemoteAddr, "with", how, "name", name)
		c.auditLogin(r, access.Principal{Name: name, Kind: access.KindUser}, name != "", admin.OutcomeDenied, how+": "+why)
		msg := "Wrong token, or a login link that was used or expired."
		if name != "" {
			msg = "Wrong user name or password."
		}
		c.showLogin(w, r, http.StatusUnauthorized, loginData{CSRF: secret(), Next: next, Bad: true, Message: msg})
		return
	}
	if c.startSession(w, r, who, how, next) {
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

// startSession signs who in: an audited session and its cookie; false when
// it could not, and the login page said why.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, who access.Principal, how, next string) bool {
	c.logins.Forget(backpressure.SourceKey(r.RemoteAddr))
	s, err := c.sessions.create(r.Context(), who)
	if err == nil {
		err = c.auditLogin(r, who, true, admin.OutcomeOK, "signed in with "+how)
		if err != nil {
			c.sessions.end(r.Context(), s)
		}
	}
	if err != nil {
		c.log.Error("console session not started", "err", err)
		c.showLogin(w, r, http.StatusServiceUnavailable, loginData{CSRF: secret(), Next: next, Bad: true,
			Message: "The session could not be started: " + err.Error()})
		return false
	}
	c.log.Info("console login", "actor", who.Actor(), "role", who.Role.String(), "with", how, "remote", r.RemoteAddr)
	clearCookie(w, r, loginCookie, "/login")
	setCookie(w, r, sessionCookie, s.id, "/", sessionTTL)
	return true
}

// auditLogin records a sign-in (or its refusal) in the audit trail.
func (c *Console) auditLogin(r *http.Request, who access.Principal, named bool, outcome, detail string) error {
	actor := ""
	if named {
		actor = who.Actor()
	}
	role := ""
	if who.Role != access.None {
		role = who.Role.String()
	}
	return c.opts.API.Record(r.Context(), admin.AuditEntry{Actor: actor, Role: role, Via: access.ViaConsole, Action: "console.login",
		Target: "console", Source: admin.SourceOf(r), Outcome: outcome, Detail: detail})
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.sessions.end(r.Context(), s)
	_ = c.opts.API.Record(r.Context(), admin.AuditEntry{Actor: s.who.Actor(), Role: s.who.Role.String(), Via: access.ViaConsole,
		Action: "console.logout", Target: "console", Source: admin.SourceOf(r), Outcome: admin.OutcomeOK})
	clearCookie(w, r, sessionCookie, "/")
	http.Redirect(w, r, "/login?out=1", http.StatusSeeOther)
}

// createLink answers POST /api/v1/console/links: a one-time login link,
// valid for 15 minutes, whose session acts as the caller that made it. The
// secret travels in the URL fragment, which browsers never send to a
// server or put in a Referer.
func (c *Console) createLink(w http.ResponseWriter, r *http.Request) {
	k, exp, err := c.sessions.newLink(r.Context(), admin.CallerOf(r).Principal)
	if err != nil {
		admin.WriteError(w, http.StatusInternalServerError, "the link could not be stored: "+err.Error())
		return
	}
	admin.WriteJSON(w, http.StatusCreated, map[string]any{"path": "/login#token=" + k, "expiresAt": exp.UTC()})
}

// refuseLogin answers a failed login from a source whose failed attempts
// spent its budget (429, with when to try again), logged at most once a
// minute per source.
func (c *Console) refuseLogin(w http.ResponseWriter, r *http.Request, src, next string) {
	if c.loginLog.Allow(src) {
		c.log.Warn("console logins refused: too many failed attempts", "source", src)
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(loginRefill/time.Second)))
	c.showLogin(w, r, http.StatusTooManyRequests, loginData{CSRF: secret(), Next: next, Bad: true,
		Message: "Too many failed logins from your address; try again in a few seconds."})
}
