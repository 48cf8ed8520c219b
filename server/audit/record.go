package audit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/store"
)

// Outcomes of a request.
const (
	OutcomeOK     = "ok"
	OutcomeDenied = "denied"
	OutcomeError  = "error"
)

// Outcomes and Vias are the values a record's outcome and via may take.
var (
	Outcomes = []string{OutcomeOK, OutcomeDenied, OutcomeError}
	Vias     = []string{access.ViaAPI, access.ViaConsole, access.ViaCLI, access.ViaEstate}
)

// ActionCut is the action of a cut's record, which only the trail writes.
const ActionCut = "audit.cut"

// Bounds of a record's fields, in bytes: a longer value is cut to its
// bound (at a character's boundary, ending in "…").
const (
	MaxActor     = 256
	MaxRole      = 32
	MaxAction    = 128
	MaxTarget    = 256
	MaxSource    = 128
	MaxRequestID = 128
	MaxDetail    = 1024
)

// Record is one entry of the audit trail: who (actor, with the role it
// had and how its request came), did what (action) to what (target), from
// where (source address, request id), with which outcome, and a detail.
// ID, Time, Prev and Hash are set by the trail when it appends the
// record. Its JSON is its canonical JSON (see the package documentation)
// followed by prev and hash.
type Record struct {
	ID        int64     `json:"id"`
	Time      time.Time `json:"time"`
	Actor     string    `json:"actor"`
	Role      string    `json:"role"`
	Via       string    `json:"via"`
	Action    string    `json:"action"`
	Target    string    `json:"target"`
	Source    string    `json:"source"`
	RequestID string    `json:"requestId"`
	Outcome   string    `json:"outcome"`
	Detail    string    `json:"detail"`
	Prev      string    `json:"prev"`
	Hash      string    `json:"hash"`
}

// By returns r made by c: its actor, role and how its request came.
func (r Record) By(c access.Caller) Record {
	r.Actor, r.Role, r.Via = c.Name, c.Role.String(), c.Via
	return r
}

// ErrInvalid marks a record the trail refuses.
var ErrInvalid = errors.New("invalid audit record")

// normalized returns r as the trail stores it: every string valid UTF-8
// without NUL (anything else becomes U+FFFD) and within its bound; or an
// error naming each field that is wrong.
func (r Record) normalized() (Record, error) {
	for _, f := range []struct {
		v   *string
		max int
	}{{&r.Actor, MaxActor}, {&r.Role, MaxRole}, {&r.Via, MaxRole}, {&r.Action, MaxAction}, {&r.Target, MaxTarget},
		{&r.Source, MaxSource}, {&r.RequestID, MaxRequestID}, {&r.Outcome, MaxRole}, {&r.Detail, MaxDetail}} {
		*f.v = bounded(*f.v, f.max)
	}
	var errs []error
	if !slices.Contains(Outcomes, r.Outcome) {
		errs = append(errs, fmt.Errorf("outcome %q is not one of %s", r.Outcome, strings.Join(Outcomes, ", ")))
	}
	if !slices.Contains(Vias, r.Via) {
		errs = append(errs, fmt.Errorf("via %q is not one of %s", r.Via, strings.Join(Vias, ", ")))
	}
	if r.Role != "" && r.Role != access.None.String() {
		if _, err := access.ParseRole(r.Role); err != nil {
			errs = append(errs, fmt.Errorf("role: %w (or none, or empty)", err))
		}
	}
	switch r.Action {
	case "":
		errs = append(errs, errors.New("action is empty"))
	case ActionCut:
		errs = append(errs, fmt.Errorf("action %s is written by the trail's cuts only", ActionCut))
	}
	if len(errs) > 0 {
		return r, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	return r, nil
}

// bounded makes s valid UTF-8 without NUL, at most max bytes.
func bounded(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// stored is r as a store keeps it.
func (r Record) stored() store.AuditRecord {
	return store.AuditRecord{ID: r.ID, Time: r.Time, Actor: r.Actor, Role: r.Role, Via: r.Via, Action: r.Action,
		Target: r.Target, Source: r.Source, RequestID: r.RequestID, Outcome: r.Outcome, Detail: r.Detail, Prev: r.Prev, Hash: r.Hash}
}

// fromStore is a stored record.
func fromStore(s store.AuditRecord) Record {
	return Record{ID: s.ID, Time: s.Time, Actor: s.Actor, Role: s.Role, Via: s.Via, Action: s.Action, Target: s.Target,
		Source: s.Source, RequestID: s.RequestID, Outcome: s.Outcome, Detail: s.Detail, Prev: s.Prev, Hash: s.Hash}
}
