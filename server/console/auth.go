package console

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	return c.sessions.get(ck.Value)
}

// page serves h to a logged-in operator; others go to the login page,
// which brings them back here.
func (c *Console) page(h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.session(r)
		if !ok {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		h(w, r, s)
	}
}

// action serves a state-changing request: a session, a request from the
// console's own pages (Sec-Fetch-Site, when the browser sends it) and the
// session's CSRF token in the form are all required.
func (c *Console) action(h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.session(r)
		if !ok {
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
		h(w, r, s)
	}
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
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.session(r); ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	d := loginData{CSRF: secret(), Next: safeNext(r.URL.Query().Get("next"))}
	if r.URL.Query().Has("out") {
		d.Message = "Logged out."
	}
	c.showLogin(w, r, http.StatusOK, d)
}

func (c *Console) showLogin(w http.ResponseWriter, r *http.Request, status int, d loginData) {
	setCookie(w, r, loginCookie, d.CSRF, "/login", time.Hour)
	w.Header().Set("Cache-Control", "no-store")
	c.render(w, r, status, "login", view{Title: "Log in", Data: d})
}

// login takes the admin token or a one-time login link's secret.
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
	// The budget of failures does not keep the admin token from being
	// guessed: it has at least 32 characters, beyond any guessing over the
	// network, and a login link's secret has 256 bits. It bounds what a
	// flood of wrong tokens costs — past it each one gets a 429 telling its
	// sender to back off, logged once a minute per source, not a line per
	// request. So the right token or a valid link logs in whatever its
	// source's budget (behind a reverse proxy every operator shares one
	// source address, and one flooding it must not lock the others out),
	// and gives its source the whole budget back.
	src := backpressure.SourceKey(r.RemoteAddr)
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	how := ""
	switch {
	case tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(c.opts.AdminToken)) == 1:
		how = "admin token"
	case tok != "" && c.sessions.useLink(tok):
		how = "login link"
	case !c.logins.Allow(src): // a failed guess spends the source's budget
		c.refuseLogin(w, r, src, next)
		return
	default:
		c.log.Warn("console login refused", "remote", r.RemoteAddr)
		c.showLogin(w, r, http.StatusUnauthorized, loginData{CSRF: secret(), Next: next, Bad: true,
			Message: "Wrong token, or a login link that was used or expired."})
		return
	}
	c.logins.Forget(src)
	s := c.sessions.create()
	c.log.Info("console login", "with", how, "remote", r.RemoteAddr)
	clearCookie(w, r, loginCookie, "/login")
	setCookie(w, r, sessionCookie, s.id, "/", sessionTTL)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.sessions.end(s)
	clearCookie(w, r, sessionCookie, "/")
	http.Redirect(w, r, "/login?out=1", http.StatusSeeOther)
}

// createLink answers POST /api/v1/console/links (admin token): a one-time
// login link, valid for 15 minutes. The secret travels in the URL fragment,
// which browsers never send to a server or put in a Referer.
func (c *Console) createLink(w http.ResponseWriter, _ *http.Request) {
	k, exp := c.sessions.newLink()
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
