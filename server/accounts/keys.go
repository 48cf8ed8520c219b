package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/myriarch/myriarch/server/access"
	"github.com/myriarch/myriarch/server/admin"
	"github.com/myriarch/myriarch/server/store"
)

var _ admin.Keys = (*Service)(nil)

// Key is an API key as the API shows it; Secret only in the answer that
// creates it.
type Key struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	Fleets    []string   `json:"fleets"`
	ExpiresAt *time.Time `json:"expiresAt"`
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	Secret    string     `json:"secret,omitempty"`
}

func keyOf(k store.APIKey) Key {
	return Key{ID: k.ID, Name: k.Name, Role: k.Role, Fleets: k.Fleets, ExpiresAt: k.ExpiresAt, CreatedBy: k.CreatedBy,
		CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}

// KeyRequest creates an API key. ExpiresIn is a duration ("720h", "90d");
// none: the key does not expire.
type KeyRequest struct {
	Name      string   `json:"name"`
	Role      string   `json:"role"`
	Fleets    []string `json:"fleets"`
	ExpiresIn string   `json:"expiresIn"`
}

var keyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._@:/-]{0,63}$`)

// MaxKeyLife is the longest an API key may be made to last.
const MaxKeyLife = 10 * 365 * 24 * time.Hour

// ParseLife reads a duration with days allowed ("90d", "36h", "1d12h").
func ParseLife(s string) (time.Duration, error) {
	var total time.Duration
	if d, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration (e.g. 90d, 720h)", s)
		}
		total, s = time.Duration(n)*24*time.Hour, rest
	}
	if s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (e.g. 90d, 720h)", s)
		}
		total += d
	}
	return total, nil
}

// CreateKey makes an API key with at most by's rights; the secret is in
// the answer only.
func (s *Service) CreateKey(ctx context.Context, by access.Principal, req KeyRequest) (Key, error) {
	if !keyName.MatchString(req.Name) {
		return Key{}, badRequest("name: %q is not a key name (1 to 64 letters, digits, spaces and . _ @ : / -)", clip(req.Name))
	}
	want, err := s.scope(req.Role, req.Fleets)
	if err != nil {
		return Key{}, err
	}
	if !by.Covers(want) {
		return Key{}, beyondRights(by, want)
	}
	now := s.opts.Now().UTC()
	k := store.APIKey{ID: "k_" + randomHex(8), Name: req.Name, Role: want.Role.String(), Fleets: want.Fleets,
		CreatedBy: by.Actor(), CreatedAt: now}
	if req.ExpiresIn != "" {
		life, err := ParseLife(req.ExpiresIn)
		if err != nil {
			return Key{}, badRequest("expiresIn: %v", err)
		}
		if life <= 0 || life > MaxKeyLife {
			return Key{}, badRequest("expiresIn: between a second and ten years, got %s", req.ExpiresIn)
		}
		exp := now.Add(life)
		k.ExpiresAt = &exp
	}
	secret := admin.KeySecretPrefix + randomBase64(32)
	sum := sha256.Sum256([]byte(secret))
	k.Hash = sum[:]
	if err := s.st.InsertAPIKey(ctx, k); err != nil {
		return Key{}, fromStore(err, "API key "+k.ID)
	}
	out := keyOf(k)
	out.Secret = secret
	return out, nil
}

// Keys lists every API key, revoked ones too.
func (s *Service) Keys(ctx context.Context) ([]Key, error) {
	ks, err := s.st.ListAPIKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Key, len(ks))
	for i, k := range ks {
		out[i] = keyOf(k)
	}
	return out, nil
}

// RevokeKey revokes an API key: refused at once on every instance.
func (s *Service) RevokeKey(ctx context.Context, by access.Principal, id string) error {
	ks, err := s.st.ListAPIKeys(ctx)
	if err != nil {
		return err
	}
	for _, k := range ks {
		if k.ID != id {
			continue
		}
		r, _ := access.ParseRole(k.Role)
		if kp := (access.Principal{Role: r, Fleets: k.Fleets}); !by.Covers(kp) {
			return beyondRights(by, kp)
		}
		return fromStore(s.st.RevokeAPIKey(ctx, id, s.opts.Now().UTC()), "API key "+id)
	}
	return &Error{Status: http.StatusNotFound, Msg: "no API key " + id}
}

// KeyPrincipal implements admin.Keys: the key's principal, read from the
// store on every request, so a revoked or expired key is refused at once.
func (s *Service) KeyPrincipal(ctx context.Context, secret string) (access.Principal, error) {
	sum := sha256.Sum256([]byte(secret))
	k, err := s.st.APIKeyByHash(ctx, sum[:])
	switch {
	case errors.Is(err, store.ErrNotFound):
		return access.Principal{}, errors.New("unknown API key")
	case err != nil:
		return access.Principal{}, fmt.Errorf("API keys cannot be read: %w", err)
	case k.RevokedAt != nil:
		return access.Principal{}, fmt.Errorf("API key %s was revoked", k.ID)
	case k.ExpiresAt != nil && !s.opts.Now().Before(*k.ExpiresAt):
		return access.Principal{}, fmt.Errorf("API key %s expired at %s", k.ID, k.ExpiresAt.Format(time.RFC3339))
	}
	r, err := access.ParseRole(k.Role)
	if err != nil {
		return access.Principal{}, fmt.Errorf("API key %s: %w", k.ID, err)
	}
	return access.Principal{Name: k.ID, Kind: access.KindAPIKey, Role: r, Fleets: k.Fleets}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("accounts: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

func randomBase64(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("accounts: no randomness: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
