package oidcprovider

import (
	"html/template"
	"net/http"
	"net/url"
	"time"
)

var loginForm = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test provider</title><link rel="icon" href="data:,"></head>
<body><form method="post" action="/login"><input type="hidden" name="id" value="{{.ID}}">
<p>Sign in to the test provider as <b id="user">{{.Name}}</b>.</p>
<button id="approve" type="submit">Sign in</button></form></body></html>
`))

// loginPage is the login step of an authorization request: one button.
func (p *Provider) loginPage(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	p.mu.Lock()
	_, ok := p.requests[id]
	u := p.user
	p.mu.Unlock()
	if !ok {
		http.Error(w, "no such authorization request", http.StatusNotFound)
		return
	}
	name := u.Email
	if name == "" {
		name = u.Subject
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginForm.Execute(w, struct{ ID, Name string }{id, name})
}

// login signs the current user in for the request, and goes on to op's
// callback, which answers the relying party with a code.
func (p *Provider) login(w http.ResponseWriter, r *http.Request) {
	id := r.PostFormValue("id")
	p.mu.Lock()
	req, ok := p.requests[id]
	if ok {
		req.user, req.done, req.authTime = p.user, true, time.Now()
	}
	p.mu.Unlock()
	if !ok {
		http.Error(w, "no such authorization request", http.StatusNotFound)
		return
	}
	http.Redirect(w, r, p.issuer+"/authorize/callback?id="+url.QueryEscape(id), http.StatusFound)
}
