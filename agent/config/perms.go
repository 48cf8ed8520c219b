package config

import (
	"fmt"
	"os"

	"github.com/myriarch/myriarch/agent/download"
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
	if c.Trust.RequireSignature && len(c.Trust.MinisignPublicKeys) == 0 {
		out = append(out, "trust: require_signature is true and trust.minisign_public_keys is empty: "+
			"every package offer will be refused (add the key that signs your packages)")
	}
	return out
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
