package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// Columns of users and API keys, in the order both backends select them.
const (
	UserColumns   = `name, role, fleets, password, created_at, updated_at`
	APIKeyColumns = `id, name, role, fleets, hash, created_by, created_at, expires_at, revoked_at`
)

// FleetsColumn is a scope as stored: NULL for every fleet, else a JSON list.
func FleetsColumn(fleets []string) *string {
	if fleets == nil {
		return nil
	}
	b, _ := json.Marshal(fleets)
	s := string(b)
	return &s
}

func fleetsOf(col *string) ([]string, error) {
	if col == nil {
		return nil, nil
	}
	out := []string{}
	if err := json.Unmarshal([]byte(*col), &out); err != nil {
		return nil, fmt.Errorf("fleets column %q: %w", *col, err)
	}
	return out, nil
}

// NanosOrNil stores an optional time.
func NanosOrNil(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func timeOrNil(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := time.Unix(0, *n).UTC()
	return &t
}

// ScanUsers reads rows of UserColumns.
func ScanUsers(rows Rows) ([]User, error) {
	var out []User
	for rows.Next() {
		var u User
		var fleets *string
		var created, updated int64
		if err := rows.Scan(&u.Name, &u.Role, &fleets, &u.Password, &created, &updated); err != nil {
			return nil, err
		}
		var err error
		if u.Fleets, err = fleetsOf(fleets); err != nil {
			return nil, fmt.Errorf("user %s: %w", u.Name, err)
		}
		u.CreatedAt, u.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		out = append(out, u)
	}
	return out, rows.Err()
}

// ScanAPIKeys reads rows of APIKeyColumns.
func ScanAPIKeys(rows Rows) ([]APIKey, error) {
	var out []APIKey
	for rows.Next() {
		var k APIKey
		var fleets *string
		var created int64
		var expires, revoked *int64
		if err := rows.Scan(&k.ID, &k.Name, &k.Role, &fleets, &k.Hash, &k.CreatedBy, &created, &expires, &revoked); err != nil {
			return nil, err
		}
		var err error
		if k.Fleets, err = fleetsOf(fleets); err != nil {
			return nil, fmt.Errorf("API key %s: %w", k.ID, err)
		}
		k.CreatedAt, k.ExpiresAt, k.RevokedAt = time.Unix(0, created).UTC(), timeOrNil(expires), timeOrNil(revoked)
		out = append(out, k)
	}
	return out, rows.Err()
}
