package config

import (
	"fmt"
	"os"
	"time"

	"github.com/myriarch/myriarch/agent/download"
	"github.com/myriarch/myriarch/agent/keyring"
	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/internal/fileperm"
)

// Who besides the updater's user may change its configuration decides what
// the updater installs and whom it trusts: a configuration or token file
// that other users may write is refused. What works but exposes a secret,
// or cannot do what it seems to, is a warning (Warnings).

// checkConfigFile refuses a configuration file other users may change.
func checkConfigFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil || !fileperm.WritableByOthers(fi) {
		return nil
	}
	return fmt.Errorf("%s has mode %04o: other users could change what the updater installs and trusts (chmod go-w %s)",
		path, fi.Mode().Perm(), path)
}

// tokenFileWritable names the problem of a token file other users may change.
func tokenFileWritable(path string) string {
	fi, err := os.Stat(path)
	if err != nil || !fileperm.WritableByOthers(fi) {
		return ""
	}
	return fmt.Sprintf("%s has mode %04o: other users could replace the token (chmod go-w %s)", path, fi.Mode().Perm(), path)
}

// Warnings are what validate reports beside a valid configuration read
// from path (which may not exist: a configuration from the environment),
// and run logs at start: secrets readable by other users, and trust
// settings under which every package offer is refused.
func Warnings(path string, c *Config) []string {
	var out []string
	if c.Server.Token != "" && c.Server.TokenFile == "" {
		if fi, err := os.Stat(path); err == nil && fileperm.ReadableByOthers(fi) && !tokenFromEnv() {
			out = append(out, fmt.Sprintf("server.token: the token is inline in %s (mode %04o), which other users can read: "+
				"move it to server.token_file with mode 0600, or chmod go-r %s", path, fi.Mode().Perm(), path))
		}
	}
	if c.Server.TokenFile != "" {
		if fi, err := os.Stat(c.Server.TokenFile); err == nil && fileperm.ReadableByOthers(fi) {
			out = append(out, fmt.Sprintf("server.token_file: %s (mode %04o) can be read by other users: chmod go-r %s",
				c.Server.TokenFile, fi.Mode().Perm(), c.Server.TokenFile))
		}
	}
	if c.Trust.RequireSignature && len(c.Trust.MinisignPublicKeys) == 0 && len(c.Trust.MinisignKeys) == 0 && c.Trust.Sigstore == nil && len(c.Trust.RootKeys) == 0 {
		out = append(out, "trust: require_signature is true and trust.minisign_public_keys is empty: "+
			"every package offer will be refused (add the key that signs your packages)")
	}
	ring, ringName := c.keptKeyring()
	if w := c.Trust.keysExpiring(time.Now(), ring, ringName); w != "" {
		out = append(out, w)
	}
	if w := c.Trust.rootExpiring(time.Now()); w != "" {
		out = append(out, w)
	}
	if p := c.Trust.SigstorePolicy(); p != nil {
		if w := p.HelperMissing(); w != "" {
			out = append(out, "trust.sigstore: "+w)
		}
	}
	return out
}

// rootExpiring warns when trust.sigstore's trusted root covers no
// certificate authority beyond KeyExpiryWarning from now.
func (t TrustConfig) rootExpiring(now time.Time) string {
	if t.Sigstore == nil {
		return ""
	}
	var data []byte // nil: the built-in root
	if f := t.Sigstore.TrustedRootFile; f != "" {
		var err error
		if data, err = os.ReadFile(f); err != nil {
			return ""
		}
	}
	end, err := verify.RootExpiry(data)
	switch {
	case err != nil || end.IsZero():
		return ""
	case !end.After(now):
		return fmt.Sprintf("trust.sigstore: the trusted root's certificate authorities ended on %s: every Sigstore-signed offer will be refused "+
			"(replace trust.sigstore.trusted_root_file)", end.UTC().Format(time.RFC3339))
	case end.Before(now.Add(KeyExpiryWarning)):
		return fmt.Sprintf("trust.sigstore: the trusted root's certificate authorities end on %s, within %d days: replace trust.sigstore.trusted_root_file",
			end.UTC().Format(time.RFC3339), int(KeyExpiryWarning.Hours()/24))
	}
	return ""
}

// SigstorePolicy is trust.sigstore for the install engine (nil when it
// is not set).
func (t TrustConfig) SigstorePolicy() *verify.SigstorePolicy {
	s := t.Sigstore
	if s == nil {
		return nil
	}
	return &verify.SigstorePolicy{Identity: s.Identity, IdentityRegexp: s.IdentityRegexp, Issuer: s.Issuer, IssuerRegexp: s.IssuerRegexp,
		TrustedRootFile: s.TrustedRootFile, WithoutTlog: s.RequireTlog != nil && !*s.RequireTlog, WithoutSCT: s.RequireSCT != nil && !*s.RequireSCT}
}

// Keyring is trust.minisign_keys for the install engine.
func (t TrustConfig) Keyring() []verify.KeySpec {
	out := make([]verify.KeySpec, len(t.MinisignKeys))
	for i, k := range t.MinisignKeys {
		out[i] = verify.KeySpec{Text: k.Key, NotBefore: k.NotBefore, NotAfter: k.NotAfter}
	}
	return out
}

// KeyExpiryWarning is how long before the last minisign key expires
// validate and run warn.
const KeyExpiryWarning = 30 * 24 * time.Hour

// keysExpiring warns when no minisign key will be valid after
// KeyExpiryWarning from now: every key has a not_after, the last one
// soon (or past). ring are the keys the host's signed keyring brings (its
// revoked keys left out), with the keyring's name for the warning.
func (t TrustConfig) keysExpiring(now time.Time, ring []verify.Key, ringName string) string {
	if len(t.MinisignPublicKeys) > 0 || len(t.MinisignKeys)+len(ring) == 0 {
		return ""
	}
	ends := make([]time.Time, 0, len(t.MinisignKeys)+len(ring))
	for _, k := range t.MinisignKeys {
		ends = append(ends, k.NotAfter)
	}
	for _, k := range ring {
		ends = append(ends, k.NotAfter)
	}
	var last time.Time
	for _, end := range ends {
		if end.IsZero() {
			return ""
		}
		if end.After(last) {
			last = end
		}
	}
	what := "trust.minisign_keys"
	switch {
	case len(ring) > 0 && len(t.MinisignKeys) > 0:
		what = "trust.minisign_keys and " + ringName
	case len(ring) > 0:
		what = ringName
	}
	switch {
	case !last.After(now):
		return fmt.Sprintf("%s: every key expired, the last on %s: every signed package offer will be refused "+
			"(add the key that signs your packages now)", what, last.UTC().Format(time.RFC3339))
	case last.Before(now.Add(KeyExpiryWarning)):
		return fmt.Sprintf("%s: the last key expires on %s, within %d days: add the next signing key before then, "+
			"or every package offer will be refused", what, last.UTC().Format(time.RFC3339), int(KeyExpiryWarning.Hours()/24))
	}
	return ""
}

// keptKeyring reads the keys of the signed keyring kept in state_dir
// (trust.root_keys), its revoked keys left out; none when there is no
// root key or no keyring that verifies.
func (c *Config) keptKeyring() ([]verify.Key, string) {
	if len(c.Trust.RootKeys) == 0 {
		return nil, ""
	}
	ring, err := keyring.Open(c.StateDir, c.Trust.RootKeys)
	if err != nil {
		return nil, ""
	}
	keys, err := ring.Keys(nil)
	if err != nil {
		return nil, ""
	}
	var out []verify.Key
	for _, k := range keys {
		if k.Revoked == "" {
			out = append(out, k)
		}
	}
	return out, fmt.Sprintf("the keyring (serial %d)", ring.Serial())
}

// tokenFromEnv reports whether the inline token comes from the environment
// rather than the file.
func tokenFromEnv() bool {
	v, ok := os.LookupEnv("MYRIARCH_ENROLLMENT_TOKEN")
	return ok && v != ""
}

// HostPatterns returns DownloadHosts for the downloader (valid once
// Validate has passed).
func (t TrustConfig) HostPatterns() []download.HostPattern { return hostPatterns(t.DownloadHosts) }

// TelemetryHostPatterns returns TelemetryHosts (valid once Validate has
// passed).
func (t TrustConfig) TelemetryHostPatterns() []download.HostPattern {
	return hostPatterns(t.TelemetryHosts)
}

func hostPatterns(hosts []string) []download.HostPattern {
	out := make([]download.HostPattern, 0, len(hosts))
	for _, h := range hosts {
		if p, err := download.ParseHostPattern(h); err == nil {
			out = append(out, p)
		}
	}
	return out
}
