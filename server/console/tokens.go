package console

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
)

type tokensData struct {
	Tokens []tokenDoc
	// Created is the token just created, with its secret: shown once, on
	// the answer to the creation, never stored by the console.
	Created *tokenDoc
	Name    string
	Labels  string
	// Manage: the operator may create and revoke tokens.
	Manage bool
}

func (c *Console) tokenList(r *http.Request) ([]tokenDoc, error) {
	var doc struct {
		Tokens []tokenDoc `json:"tokens"`
	}
	if err := c.api.get(r.Context(), "/api/v1/tokens", &doc); err != nil {
		return nil, err
	}
	sort.SliceStable(doc.Tokens, func(i, j int) bool {
		if (doc.Tokens[i].RevokedAt == nil) != (doc.Tokens[j].RevokedAt == nil) {
			return doc.Tokens[i].RevokedAt == nil
		}
		return doc.Tokens[i].Name < doc.Tokens[j].Name
	})
	return doc.Tokens, nil
}

func (c *Console) tokens(w http.ResponseWriter, r *http.Request, s *session) {
	c.showTokens(w, r, s, http.StatusOK, tokensData{}, c.flash(r, s), "")
}

func (c *Console) showTokens(w http.ResponseWriter, r *http.Request, s *session, status int, d tokensData, flash, errMsg string) {
	list, err := c.tokenList(r)
	if err != nil {
		c.failAPI(w, r, s, err)
		return
	}
	d.Tokens = list
	d.Manage = may(r.Context(), "POST /tokens", "")
	c.render(w, r, status, "tokens", view{Title: "Enrollment tokens", Nav: "tokens", CSRF: s.csrf, Flash: flash, Error: errMsg, Data: d})
}

// createToken creates an enrollment token (POST /api/v1/tokens) and shows
// its secret in the answer, once.
func (c *Console) createToken(w http.ResponseWriter, r *http.Request, s *session) {
	name := strings.TrimSpace(r.PostForm.Get("name"))
	labelsText := r.PostForm.Get("labels")
	labels := map[string]string{}
	for i, line := range strings.Split(labelsText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			c.showTokens(w, r, s, http.StatusBadRequest, tokensData{Name: name, Labels: labelsText}, "",
				"Labels: line "+itoa(i+1)+" is not KEY=VALUE.")
			return
		}
		labels[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	body, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/tokens", map[string]any{"name": name, "labels": labels})
	if err != nil {
		status := http.StatusBadGateway
		if ae, ok := err.(*apiError); ok {
			status = ae.Status
		}
		c.showTokens(w, r, s, status, tokensData{Name: name, Labels: labelsText}, "", err.Error())
		return
	}
	var t tokenDoc
	if err := jsonInto(body, &t); err != nil {
		c.failAPI(w, r, s, err)
		return
	}
	c.showTokens(w, r, s, http.StatusCreated, tokensData{Created: &t}, "", "")
}

// revokeToken revokes a token (DELETE /api/v1/tokens/{id}).
func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request, s *session) {
	body, err := c.api.call(r.Context(), http.MethodDelete, "/api/v1/tokens/"+url.PathEscape(r.PathValue("id")), nil)
	if err != nil {
		c.failAPI(w, r, s, err)
		return
	}
	var res struct {
		Token tokenDoc `json:"token"`
	}
	_ = jsonInto(body, &res)
	c.redirectDone(w, r, s, "/tokens", "Token "+displayText(res.Token.Name, shortText, false)+
		" revoked; agents connected with it were disconnected.")
}

func itoa(n int) string { return num(n) }
