package accounts

import (
	"errors"
	"net/http"
	"strings"

	"github.com/myriarch/myriarch/server/admin"
)

// Routes adds the users and API keys routes, and GET /api/v1/whoami.
func (s *Service) Routes(api *admin.API) {
	api.Handle("GET /api/v1/whoami", whoami)
	api.Handle("GET /api/v1/users", func(w http.ResponseWriter, r *http.Request) {
		us, err := s.Users(r.Context())
		answer(w, r, http.StatusOK, map[string]any{"users": us}, err)
	})
	api.Handle("POST /api/v1/users", func(w http.ResponseWriter, r *http.Request) {
		var req UserRequest
		if !admin.DecodeJSON(w, r, &req) {
			return
		}
		u, err := s.CreateUser(r.Context(), admin.CallerOf(r).Principal, req)
		admin.NoteAudit(r, "users/"+req.Name, "role "+req.Role+fleetsNote(req.Fleets))
		answer(w, r, http.StatusCreated, u, err)
	})
	api.Handle("PATCH /api/v1/users/{name}", func(w http.ResponseWriter, r *http.Request) {
		var p UserPatch
		if !admin.DecodeJSON(w, r, &p) {
			return
		}
		u, err := s.UpdateUser(r.Context(), admin.CallerOf(r).Principal, r.PathValue("name"), p)
		if err == nil {
			admin.NoteAudit(r, "", "now role "+u.Role+fleetsNote(u.Fleets)+passwordNote(p))
		}
		answer(w, r, http.StatusOK, u, err)
	})
	api.Handle("DELETE /api/v1/users/{name}", func(w http.ResponseWriter, r *http.Request) {
		err := s.DeleteUser(r.Context(), admin.CallerOf(r).Principal, r.PathValue("name"))
		answer(w, r, http.StatusOK, map[string]string{"deleted": r.PathValue("name")}, err)
	})
	api.Handle("GET /api/v1/apikeys", func(w http.ResponseWriter, r *http.Request) {
		ks, err := s.Keys(r.Context())
		answer(w, r, http.StatusOK, map[string]any{"apikeys": ks}, err)
	})
	api.Handle("POST /api/v1/apikeys", func(w http.ResponseWriter, r *http.Request) {
		var req KeyRequest
		if !admin.DecodeJSON(w, r, &req) {
			return
		}
		k, err := s.CreateKey(r.Context(), admin.CallerOf(r).Principal, req)
		if err == nil {
			admin.NoteAudit(r, "apikeys/"+k.ID, "key "+k.Name+", role "+k.Role+fleetsNote(k.Fleets)+expiryNote(k))
		} else {
			admin.NoteAudit(r, "", "key "+req.Name+", role "+req.Role+fleetsNote(req.Fleets))
		}
		answer(w, r, http.StatusCreated, k, err)
	})
	api.Handle("DELETE /api/v1/apikeys/{id}", func(w http.ResponseWriter, r *http.Request) {
		err := s.RevokeKey(r.Context(), admin.CallerOf(r).Principal, r.PathValue("id"))
		answer(w, r, http.StatusOK, map[string]string{"revoked": r.PathValue("id")}, err)
	})
}

// whoami answers the caller's principal.
func whoami(w http.ResponseWriter, r *http.Request) {
	c := admin.CallerOf(r)
	admin.WriteJSON(w, http.StatusOK, map[string]any{"name": c.Name, "kind": c.Kind, "role": c.Role.String(),
		"fleets": c.Fleets, "actor": c.Actor()})
}

// answer writes v with status, or err as its answer.
func answer(w http.ResponseWriter, _ *http.Request, status int, v any, err error) {
	var e *Error
	switch {
	case err == nil:
		admin.WriteJSON(w, status, v)
	case errors.As(err, &e) && e.Need != "":
		admin.WriteJSON(w, e.Status, map[string]string{"error": e.Msg, "need": e.Need})
	case errors.As(err, &e):
		admin.WriteError(w, e.Status, e.Msg)
	default:
		admin.WriteError(w, http.StatusInternalServerError, err.Error())
	}
}

func fleetsNote(f []string) string {
	if f == nil {
		return " on every fleet"
	}
	return " on fleets " + strings.Join(f, ", ")
}

func passwordNote(p UserPatch) string {
	if p.Password != nil {
		return "; password changed"
	}
	return ""
}

func expiryNote(k Key) string {
	if k.ExpiresAt == nil {
		return ", no expiry"
	}
	return ", expires " + k.ExpiresAt.Format("2006-01-02T15:04:05Z")
}
