package accounts

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// The argon2id parameters of new password hashes (OWASP's first
// recommendation): 19 MiB of memory, two passes, one lane. A hash records
// its own parameters, so changing these leaves existing ones readable.
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// Password bounds.
const (
	MinPassword = 12
	MaxPassword = 1024
)

// hashing bounds the password checks running at once: each holds 19 MiB.
var hashing = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))

// HashPassword returns the PHC string of password's argon2id hash.
func HashPassword(password string) string {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		panic("accounts: no randomness: " + err.Error())
	}
	key := derive(password, salt, argonMemory, argonTime, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

func derive(password string, salt []byte, memory, time uint32, threads uint8, keyLen uint32) []byte {
	hashing <- struct{}{}
	defer func() { <-hashing }()
	return argon2.IDKey([]byte(password), salt, time, memory, threads, keyLen)
}

var errBadHash = errors.New("not an argon2id hash")

// CheckPassword reports whether password matches the PHC string phc.
func CheckPassword(phc, password string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var memory, time uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &time, &threads); err != nil ||
		memory == 0 || memory > 1<<20 || time == 0 || time > 16 || threads == 0 {
		return false, errBadHash
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(key) == 0 || len(key) > 64 {
		return false, errBadHash
	}
	got := derive(password, salt, memory, time, threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// decoy is checked against when a user does not exist or has no
// password, so that a sign-in takes as long whatever the name.
var decoy = sync.OnceValue(func() string { return HashPassword("no such user; this password matches nothing") })
