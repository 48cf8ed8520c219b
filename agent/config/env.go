package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// EnvVar is an environment variable that overrides a key of the
// configuration file, for hosts and containers configured without one.
type EnvVar struct {
	Name string // MYRIARCH_…
	Key  string // the YAML key it overrides
	Doc  string // a few words
}

// envVar is an EnvVar with how it applies.
type envVar struct {
	EnvVar
	// answers is a further key whose "required" problem this variable
	// would solve (the token file answers server.token).
	answers string
	apply   func(c *Config, v string)
}

// environment is every variable the updater reads, in the order they are
// documented and applied.
var environment = []envVar{
	{EnvVar: EnvVar{"MYRIARCH_SERVER_ENDPOINT", "server.endpoint", "the OpAMP server URL"},
		apply: func(c *Config, v string) { c.Server.Endpoint = v }},
	{EnvVar: EnvVar{"MYRIARCH_ENROLLMENT_TOKEN", "server.token", "the enrollment token"},
		apply: func(c *Config, v string) { c.Server.Token, c.Server.TokenFile = v, "" }},
	{EnvVar: EnvVar{"MYRIARCH_ENROLLMENT_TOKEN_FILE", "server.token_file", "a file holding the token"},
		answers: "server.token",
		apply:   func(c *Config, v string) { c.Server.TokenFile, c.Server.Token = v, "" }},
	{EnvVar: EnvVar{"MYRIARCH_MODE", "mode", "binary or container"},
		apply: func(c *Config, v string) { c.Mode = v }},
	{EnvVar: EnvVar{"MYRIARCH_CONTAINER_NAME", "container.name", "the collector container"},
		apply: func(c *Config, v string) { c.Container.Name = v }},
	{EnvVar: EnvVar{"MYRIARCH_STATE_DIR", "state_dir", "the state directory"},
		apply: func(c *Config, v string) { c.StateDir = v }},
	{EnvVar: EnvVar{"MYRIARCH_MINISIGN_PUBLIC_KEYS", "trust.minisign_public_keys", "comma-separated keys"},
		apply: func(c *Config, v string) { c.Trust.MinisignPublicKeys = commaList(v) }},
	{EnvVar: EnvVar{"MYRIARCH_ROOT_KEYS", "trust.root_keys", "comma-separated keys"},
		apply: func(c *Config, v string) { c.Trust.RootKeys = commaList(v) }},
	{EnvVar: EnvVar{"MYRIARCH_DOWNLOAD_HOSTS", "trust.download_hosts", "comma-separated hosts"},
		apply: func(c *Config, v string) { c.Trust.DownloadHosts = commaList(v) }},
	{EnvVar: EnvVar{"MYRIARCH_TELEMETRY_HOSTS", "trust.telemetry_hosts", "comma-separated hosts"},
		apply: func(c *Config, v string) { c.Trust.TelemetryHosts = commaList(v) }},
}

// Environment lists the variables that override the configuration file.
func Environment() []EnvVar {
	vars := make([]EnvVar, len(environment))
	for i, v := range environment {
		vars[i] = v.EnvVar
	}
	return vars
}

// EnvInUse names the variables of Environment set in this process's
// environment.
func EnvInUse() []string {
	env := readEnv(os.LookupEnv)
	return env.names()
}

// overrides are the variables set in one environment.
type overrides struct {
	set      []envVar
	values   []string
	problems []error
}

// readEnv reads every variable of the table. An empty variable counts as
// unset; surrounding whitespace (a token's trailing newline) is dropped.
func readEnv(getenv func(string) (string, bool)) overrides {
	var o overrides
	for _, v := range environment {
		val, ok := getenv(v.Name)
		if val = strings.TrimSpace(val); !ok || val == "" {
			continue
		}
		o.set, o.values = append(o.set, v), append(o.values, val)
	}
	const tok, tokFile = "MYRIARCH_ENROLLMENT_TOKEN", "MYRIARCH_ENROLLMENT_TOKEN_FILE"
	if o.has(tok) && o.has(tokFile) {
		o.problems = append(o.problems, fieldErr(tok, "set only one of %s and %s", tok, tokFile))
		o.drop(tok, tokFile)
	}
	return o
}

func (o *overrides) has(name string) bool {
	return slices.ContainsFunc(o.set, func(v envVar) bool { return v.Name == name })
}

func (o *overrides) drop(names ...string) {
	for i := len(o.set) - 1; i >= 0; i-- {
		if slices.Contains(names, o.set[i].Name) {
			o.set, o.values = slices.Delete(o.set, i, i+1), slices.Delete(o.values, i, i+1)
		}
	}
}

func (o *overrides) names() []string {
	names := make([]string, len(o.set))
	for i, v := range o.set {
		names[i] = v.Name
	}
	return names
}

func (o *overrides) apply(c *Config) {
	for i, v := range o.set {
		v.apply(c, o.values[i])
	}
}

// attribute makes a validation problem name the variable that set the
// offending value (the file's line no longer matters), or, for a required
// key left unset, the variables that could provide it.
func (o *overrides) attribute(fe *FieldError) {
	if v, ok := o.setting(fe.Path); ok {
		fe.Path, fe.Line = v.Name+" ("+fe.Path+")", 0
		return
	}
	if !strings.HasPrefix(fe.Err.Error(), "required") {
		return
	}
	var could []string
	for _, v := range environment {
		if v.Key == fe.Path || v.answers == fe.Path {
			could = append(could, v.Name)
		}
	}
	if len(could) > 0 {
		fe.Err = fmt.Errorf("%w (or set %s)", fe.Err, strings.Join(could, " or "))
	}
}

// LoadEnv is Load with getenv (os.LookupEnv for Load) as the environment.
// The variables of Environment override the file's keys. When the file
// does not exist and at least one of them is set, the configuration is the
// defaults with the environment over them; with none set, a missing file
// is an error.
func LoadEnv(path string, getenv func(string) (string, bool)) (*Config, error) {
	cfg, err := loadPartial(path, getenv)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// LoadPartial is Load for read-only views of the updater (`status`): it
// also returns the configuration when it has problems, as far as it could
// be decoded, with Load's error. The configuration is nil only when the
// file cannot be read.
func LoadPartial(path string) (*Config, error) { return loadPartial(path, os.LookupEnv) }

func loadPartial(path string, getenv func(string) (string, bool)) (*Config, error) {
	env := readEnv(getenv)
	source := path
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && len(env.set)+len(env.problems) > 0:
		data, source = nil, "from the environment (no file "+path+")"
	case err != nil:
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, problems := parse(data, &env)
	if data != nil {
		if err := checkConfigFile(path); err != nil {
			problems = append([]error{err}, problems...)
		}
	}
	if len(problems) > 0 {
		return cfg, &Error{File: source, Problems: problems}
	}
	return cfg, nil
}

// sets reports whether a variable set the key at path.
func (o *overrides) sets(path string) bool {
	_, ok := o.setting(path)
	return ok
}

// setting returns the variable that set the key at path (or an element of
// the list at path).
func (o *overrides) setting(path string) (envVar, bool) {
	for _, v := range o.set {
		if path == v.Key || strings.HasPrefix(path, v.Key+"[") {
			return v, true
		}
	}
	return envVar{}, false
}

// commaList splits a comma-separated variable, dropping empty items.
func commaList(v string) []string {
	var out []string
	for k := range strings.SplitSeq(v, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}
