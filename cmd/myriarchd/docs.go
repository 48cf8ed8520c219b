package main

import (
	"fmt"
	"io"
	"strings"
)

const serveAbout = `Runs the OpAMP server and its admin API.

Every setting is a flag, an environment variable and, except --config, a key
of the YAML file --config names: the flag's name with _ for - (data_dir,
admin_listen, ...). A flag wins over its variable, the variable over the
file, the file over the default. The file is strict: an unknown key, a
duplicate key or a value of the wrong type is an error. A mapping (oidc_roles)
is a key of the file only.
"myriarchd help config" prints this reference as Markdown.`

// printSettings prints serve's flags with their variables and file keys.
func printSettings(w io.Writer) {
	def := defaultServeConfig()
	for i := range settings {
		s := &settings[i]
		name := "--" + s.flag
		if s.arg != "" {
			name += " " + s.arg
		}
		where := s.env()
		if !s.noFile {
			where += ", " + s.key() + ":"
		}
		if s.fileOnly {
			name, where = s.key()+":", "config file only"
		}
		fmt.Fprintf(w, "  %-28s %s\n        %s", name, where, s.usage)
		if len(s.choices) > 0 {
			fmt.Fprintf(w, ": %s", strings.Join(s.choices, ", "))
		}
		if v := s.value(&def); v != "" && v != "false" {
			fmt.Fprintf(w, " (default %s)", v)
		}
		fmt.Fprintln(w)
	}
}

var markdownEscaper = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")

// printReference prints every setting of serve as a Markdown table.
func printReference(w io.Writer) {
	def := defaultServeConfig()
	fmt.Fprintln(w, "| Flag | Environment variable | Config file key | Default | Meaning |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for i := range settings {
		s := &settings[i]
		flag := "`--" + s.flag
		if s.arg != "" {
			flag += " " + s.arg
		}
		flag += "`"
		env := "`" + s.env() + "`"
		if s.fileOnly {
			flag, env = "—", "—"
		}
		key := "—"
		if !s.noFile {
			key = "`" + s.key() + "`"
		}
		v := "—"
		if d := s.value(&def); d != "" {
			v = "`" + d + "`"
		}
		usage := s.usage
		if len(s.choices) > 0 {
			usage += ": `" + strings.Join(s.choices, "`, `") + "`"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", flag, env, key, v, markdownEscaper.Replace(usage))
	}
}
