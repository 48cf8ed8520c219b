package store

import (
	"context"
	"errors"
	"time"
)

// ErrLastAdmin refuses a change that would leave no user with the admin
// role over every fleet.
var ErrLastAdmin = errors.New("it would leave no user with the admin role over every fleet")

// User is a local account of the admin API and the console.
type User struct {
	Name string
	Role string
	// Fleets scopes the role; nil: every fleet.
	Fleets []string
	// Password is the PHC string of the password's argon2id hash ("": the
	// account has no password yet and cannot sign in).
	Password  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// APIKey is a key for scripts; its secret is kept as its SHA-256 only.
type APIKey struct {
	ID        string
	Name      string
	Role      string
	Fleets    []string
	Hash      []byte
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt *time.Time
	RevokedAt *time.Time
}

// Session is a console session, kept in the store so that every instance
// sharing it knows the session; ID is the SHA-256 of the cookie's secret.
type Session struct {
	ID []byte
	// Principal is the session's principal, JSON.
	Principal []byte
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Accounts persists users, API keys, console sessions and one-time login
// links.
type Accounts interface {
	// InsertUser adds u; ErrConflict when the name is taken.
	InsertUser(ctx context.Context, u User) error
	// UpdateUser replaces the user named u.Name (role, fleets, password,
	// updated time); ErrNotFound; ErrLastAdmin.
	UpdateUser(ctx context.Context, u User) error
	// DeleteUser removes a user; ErrNotFound; ErrLastAdmin.
	DeleteUser(ctx context.Context, name string) error
	// GetUser returns one user; ErrNotFound.
	GetUser(ctx context.Context, name string) (User, error)
	// ListUsers returns every user by name.
	ListUsers(ctx context.Context) ([]User, error)

	// InsertAPIKey adds k; ErrConflict when its id or hash is taken.
	InsertAPIKey(ctx context.Context, k APIKey) error
	// RevokeAPIKey marks a key revoked (it stays, refused); ErrNotFound.
	RevokeAPIKey(ctx context.Context, id string, at time.Time) error
	// ListAPIKeys returns every key, revoked ones too, oldest first.
	ListAPIKeys(ctx context.Context) ([]APIKey, error)
	// APIKeyByHash returns the key whose secret hashes to hash; ErrNotFound.
	APIKeyByHash(ctx context.Context, hash []byte) (APIKey, error)

	// PutSession stores s; beyond max sessions the ones closest to expiry
	// are dropped.
	PutSession(ctx context.Context, s Session, max int) error
	// GetSession returns the session with id, expired or not; ErrNotFound.
	GetSession(ctx context.Context, id []byte) (Session, error)
	// DeleteSession ends a session (no error when there is none).
	DeleteSession(ctx context.Context, id []byte) error
	// PutLoginLink stores a one-time login link (its secret's SHA-256) and
	// the principal (JSON) its session acts as; beyond max links the ones
	// closest to expiry are dropped.
	PutLoginLink(ctx context.Context, id, principal []byte, expires time.Time, max int) error
	// UseLoginLink consumes a link: its principal and true when it existed
	// and had not expired at now. A link is used once, whichever instance
	// takes it.
	UseLoginLink(ctx context.Context, id []byte, now time.Time) ([]byte, bool, error)
	// DeleteExpired drops sessions and links expired at now.
	DeleteExpired(ctx context.Context, now time.Time) error
}
