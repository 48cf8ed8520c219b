package audit

import (
	"errors"
	"net/http"

	"github.com/myriarch/myriarch/server/admin"
)

// Routes adds the audit trail's routes to the admin API: GET
// /api/v1/audit, a page of records ({"records": [...], "next": cursor},
// newest first), and GET /api/v1/audit/verify, a Verification. Neither
// changes the trail; no route does.
func (t *Trail) Routes(api *admin.API) {
	api.Handle("GET /api/v1/audit", t.list)
	api.Handle("GET /api/v1/audit/verify", t.verify)
}

func (t *Trail) list(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.URL.Query())
	if err != nil {
		admin.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := t.List(r.Context(), q)
	var pe *ParamError
	switch {
	case errors.As(err, &pe):
		admin.WriteError(w, http.StatusBadRequest, pe.Error())
		return
	case err != nil:
		admin.WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	admin.WriteJSON(w, http.StatusOK, p)
}

func (t *Trail) verify(w http.ResponseWriter, r *http.Request) {
	v, err := t.Verify(r.Context())
	if err != nil {
		admin.WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	admin.WriteJSON(w, http.StatusOK, v)
}
