package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/yamlstrict"
	"github.com/myriarch/myriarch/server/oidclogin"
)

// bindFlags adds every setting to fs as a flag on its field of cfg, with
// cfg's value as the default.
func bindFlags(fs *flag.FlagSet, cfg *serveConfig) {
	for i := range settings {
		s := &settings[i]
		if s.fileOnly {
			continue
		}
		switch p := s.field(cfg).(type) {
		case *string:
			fs.StringVar(p, s.flag, *p, s.usage)
		case *bool:
			fs.BoolVar(p, s.flag, *p, s.usage)
		case *time.Duration:
			fs.DurationVar(p, s.flag, *p, s.usage)
		case *int:
			fs.IntVar(p, s.flag, *p, s.usage)
		default:
			panic(fmt.Sprintf("setting %s: unsupported type %T", s.flag, p))
		}
	}
}

// resolve completes cfg, which holds the parsed flags of fs, from the
// environment (getenv, as os.LookupEnv) and the config file: a flag wins
// over its variable, the variable over the file, the file over the
// default. The file is --config, else MYRIARCH_CONFIG. Every problem is
// reported at once: the file's with their key and line, the variables'
// with the variable's name, the flags' with the flag's.
func resolve(fs *flag.FlagSet, cfg *serveConfig, getenv func(string) (string, bool)) error {
	byFlag := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { byFlag[f.Name] = true })
	env, inEnv, envProblems := readEnvironment(getenv)
	if cf := settingIndex("config"); !byFlag["config"] && inEnv[cf] {
		cfg.ConfigFile = env.ConfigFile
	}
	var errs []error
	var file serveConfig
	lines := make([]int, len(settings)) // stays 0 without a file
	if cfg.ConfigFile != "" {
		f, l, fileProblems, err := decodeConfigFile(cfg.ConfigFile)
		switch {
		case err != nil:
			errs = append(errs, err)
		case len(fileProblems) > 0:
			errs = append(errs, &yamlstrict.Error{File: cfg.ConfigFile, Problems: fileProblems})
			fallthrough
		default:
			file, lines = f, l
		}
	}
	errs = append(errs, envProblems...)
	for i := range settings {
		s := &settings[i]
		switch {
		case byFlag[s.flag]:
			if !s.allows(s.value(cfg)) {
				errs = append(errs, fmt.Errorf("--%s %q: %s", s.flag, s.value(cfg), s.mustBe()))
			}
		case inEnv[i]:
			copySetting(s, cfg, &env)
		case lines[i] > 0:
			copySetting(s, cfg, &file)
		}
	}
	return errors.Join(errs...)
}

// readEnvironment reads every setting's variable into a copy of the
// defaults; inEnv[i] says settings[i] is set there. An empty variable
// counts as unset.
func readEnvironment(getenv func(string) (string, bool)) (env serveConfig, inEnv []bool, problems []error) {
	env = defaultServeConfig()
	inEnv = make([]bool, len(settings))
	for i := range settings {
		s := &settings[i]
		v, ok := getenv(s.env())
		if !ok || v == "" {
			continue
		}
		if s.fileOnly {
			problems = append(problems, fmt.Errorf("%s is set, but %s is a key of the config file only", s.env(), s.key()))
			continue
		}
		if err := parseValue(s.field(&env), v); err != nil {
			problems = append(problems, fmt.Errorf("%s=%q: %w", s.env(), v, err))
			continue
		}
		if !s.allows(v) {
			problems = append(problems, fmt.Errorf("%s=%q: %s", s.env(), v, s.mustBe()))
			continue
		}
		inEnv[i] = true
	}
	return env, inEnv, problems
}

// parseValue sets *p from the text of an environment variable.
func parseValue(p any, v string) error {
	want := errors.New("expected " + yamlstrict.Expected(reflect.TypeOf(p).Elem()))
	switch p := p.(type) {
	case *string:
		*p = v
	case *bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return want
		}
		*p = b
	case *time.Duration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return want
		}
		*p = d
	case *int:
		n, err := strconv.Atoi(v)
		if err != nil {
			return want
		}
		*p = n
	default:
		panic(fmt.Sprintf("unsupported setting type %T", p))
	}
	return nil
}

// decodeConfigFile decodes the config file at path over a copy of the
// defaults, strictly, each value checked against its setting's choices.
// lines[i] is the line of settings[i]'s valid key (0: not in the file);
// problems are the file's, each naming its key and line; err is a file
// that cannot be read.
func decodeConfigFile(path string) (file serveConfig, lines []int, problems []error, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return file, nil, nil, fmt.Errorf("read config: %w", err)
	}
	file = defaultServeConfig()
	lines = make([]int, len(settings))
	root, err := yamlstrict.Parse(data)
	if err != nil {
		return file, lines, []error{err}, nil
	}
	keys := map[string]int{}
	for i := range settings {
		if !settings[i].noFile {
			keys[settings[i].key()] = i
		}
	}
	d := yamlstrict.NewDecoder()
	d.Mapping(root, "", keys, func(i int, val *yaml.Node, path string) {
		s := &settings[i]
		if roles, ok := s.field(&file).(*oidclogin.Roles); ok {
			decodeRoles(d, val, path, roles)
		} else {
			d.Decode(val, reflect.ValueOf(s.field(&file)).Elem(), path)
		}
		switch {
		case d.Failed(path):
		case !s.allows(s.value(&file)):
			d.Fail(path, d.Line(path), "%s, got %q", s.mustBe(), s.value(&file))
		default:
			lines[i] = d.Line(path)
		}
	})
	return file, lines, d.Problems(), nil
}

// settingIndex returns the index of the setting of a flag.
func settingIndex(flag string) int {
	for i := range settings {
		if settings[i].flag == flag {
			return i
		}
	}
	panic("no setting " + flag)
}

func copySetting(s *setting, dst, src *serveConfig) {
	reflect.ValueOf(s.field(dst)).Elem().Set(reflect.ValueOf(s.field(src)).Elem())
}
