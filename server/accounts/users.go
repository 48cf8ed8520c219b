package accounts

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/store"
)

// Service keeps users and API keys. Safe for concurrent use.
type Service struct {
	st   store.Accounts
	opts Options
}

// Options configure a Service.
type Options struct {
	Now func() time.Time
	// FleetExists reports whether the estate has a fleet of that name: a
	// scope names existing fleets only. Nil accepts any.
	FleetExists func(name string) bool
}

// New returns a Service over st.
func New(st store.Accounts, opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{st: st, opts: opts}
}

// User is a user as the API shows it: never its password's hash.
type User struct {
	Name        string    `json:"name"`
	Role        string    `json:"role"`
	Fleets      []string  `json:"fleets"`
	HasPassword bool      `json:"hasPassword"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

func userOf(u store.User) User {
	return User{Name: u.Name, Role: u.Role, Fleets: u.Fleets, HasPassword: u.Password != "", CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// UserRequest creates a user.
type UserRequest struct {
	Name     string   `json:"name"`
	Role     string   `json:"role"`
	Fleets   []string `json:"fleets"`
	Password string   `json:"password"`
}

// UserPatch changes a user: a field present replaces what the user has
// ("fleets": null scopes the role to every fleet).
type UserPatch struct {
	Role     *string         `json:"role"`
	Fleets   json.RawMessage `json:"fleets"`
	Password *string         `json:"password"`
}

var userName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// scope reads a role and fleets into the principal they make.
func (s *Service) scope(role string, fleets []string) (access.Principal, error) {
	r, err := access.ParseRole(role)
	if err != nil {
		return access.Principal{}, badRequest("role: %v", err)
	}
	p := access.Principal{Role: r}
	if fleets != nil {
		p.Fleets = []string{}
		for _, f := range fleets {
			if s.opts.FleetExists != nil && !s.opts.FleetExists(f) {
				return access.Principal{}, badRequest("fleets: %q names no fleet of the estate", f)
			}
			p.Fleets = append(p.Fleets, f)
		}
	}
	return p, nil
}

func checkPassword(pw string) error {
	switch {
	case len([]rune(pw)) < MinPassword:
		return badRequest("password: at least %d characters", MinPassword)
	case len(pw) > MaxPassword:
		return badRequest("password: at most %d bytes", MaxPassword)
	}
	return nil
}

// CreateUser adds a user; by is who creates it.
func (s *Service) CreateUser(ctx context.Context, by access.Principal, req UserRequest) (User, error) {
	if !userName.MatchString(req.Name) {
		return User{}, badRequest("name: %q is not a user name (1 to 64 letters, digits, '.', '_', '@', '-', not starting with a symbol)", clip(req.Name))
	}
	want, err := s.scope(req.Role, req.Fleets)
	if err != nil {
		return User{}, err
	}
	if !by.Covers(want) {
		return User{}, beyondRights(by, want)
	}
	u := store.User{Name: req.Name, Role: want.Role.String(), Fleets: want.Fleets}
	if req.Password != "" {
		if err := checkPassword(req.Password); err != nil {
			return User{}, err
		}
		u.Password = HashPassword(req.Password)
	}
	u.CreatedAt = s.opts.Now().UTC()
	u.UpdatedAt = u.CreatedAt
	if err := s.st.InsertUser(ctx, u); err != nil {
		return User{}, fromStore(err, fmt.Sprintf("user %q", req.Name))
	}
	return userOf(u), nil
}

// UpdateUser changes a user; by is who changes it, and must cover what the
// user has and what it is given.
func (s *Service) UpdateUser(ctx context.Context, by access.Principal, name string, patch UserPatch) (User, error) {
	u, err := s.st.GetUser(ctx, name)
	if err != nil {
		return User{}, fromStore(err, fmt.Sprintf("user %q", name))
	}
	if !by.Covers(principalOf(u)) {
		return User{}, beyondRights(by, principalOf(u))
	}
	role, fleets := u.Role, u.Fleets
	if patch.Role != nil {
		role = *patch.Role
	}
	if patch.Fleets != nil {
		fleets = nil
		if string(patch.Fleets) != "null" {
			if err := json.Unmarshal(patch.Fleets, &fleets); err != nil || fleets == nil {
				return User{}, badRequest("fleets: a list of fleet names, or null for every fleet")
			}
		}
	}
	want, err := s.scope(role, fleets)
	if err != nil {
		return User{}, err
	}
	if !by.Covers(want) {
		return User{}, beyondRights(by, want)
	}
	u.Role, u.Fleets = want.Role.String(), want.Fleets
	if patch.Password != nil {
		if err := checkPassword(*patch.Password); err != nil {
			return User{}, err
		}
		u.Password = HashPassword(*patch.Password)
	}
	u.UpdatedAt = s.opts.Now().UTC()
	if err := s.st.UpdateUser(ctx, u); err != nil {
		return User{}, fromStore(err, fmt.Sprintf("user %q", name))
	}
	return userOf(u), nil
}

// DeleteUser removes a user; by must cover what it has.
func (s *Service) DeleteUser(ctx context.Context, by access.Principal, name string) error {
	u, err := s.st.GetUser(ctx, name)
	if err != nil {
		return fromStore(err, fmt.Sprintf("user %q", name))
	}
	if !by.Covers(principalOf(u)) {
		return beyondRights(by, principalOf(u))
	}
	return fromStore(s.st.DeleteUser(ctx, name), fmt.Sprintf("user %q", name))
}

// Users lists every user.
func (s *Service) Users(ctx context.Context) ([]User, error) {
	us, err := s.st.ListUsers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]User, len(us))
	for i, u := range us {
		out[i] = userOf(u)
	}
	return out, nil
}

func principalOf(u store.User) access.Principal {
	r, _ := access.ParseRole(u.Role)
	return access.Principal{Name: u.Name, Kind: access.KindUser, Role: r, Fleets: u.Fleets}
}

// ErrSignIn refuses a sign-in: an unknown user, no password, a wrong one.
var ErrSignIn = fmt.Errorf("wrong user name or password")

// SignIn checks a user's password and returns the user's principal. It
// takes as long for a name that does not exist.
func (s *Service) SignIn(ctx context.Context, name, password string) (access.Principal, error) {
	u, err := s.st.GetUser(ctx, name)
	if err != nil || u.Password == "" {
		_, _ = CheckPassword(decoy(), password)
		return access.Principal{}, ErrSignIn
	}
	ok, err := CheckPassword(u.Password, password)
	if err != nil || !ok {
		return access.Principal{}, ErrSignIn
	}
	return principalOf(u), nil
}

// UserPrincipal returns a user's principal as it is now (its role may have
// changed since a session began); an error when the user is gone.
func (s *Service) UserPrincipal(ctx context.Context, name string) (access.Principal, error) {
	u, err := s.st.GetUser(ctx, name)
	if err != nil {
		return access.Principal{}, err
	}
	return principalOf(u), nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
