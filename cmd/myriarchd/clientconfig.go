package main

import (
	"flag"
	"net"
	"os"

	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/yamlstrict"
)

// clientFlags adds the admin client's flags and --config: the server's own
// configuration file (also MYRIARCH_CONFIG), whose admin_listen, data_dir
// and admin_token_file say where the server is when no flag or variable
// does — so `myriarchd agents list --config /etc/myriarch/myriarchd.yaml`
// finds a server that `serve --config` with the same file runs.
func clientFlags(fs *flag.FlagSet) func() (*adminclient.Client, error) {
	path := fs.String("config", "", "the server's config `FILE`, read for admin_listen, data_dir and admin_token_file (env MYRIARCH_CONFIG)")
	return adminclient.FlagsWith(fs, func() (adminclient.Settings, error) {
		p := *path
		if p == "" {
			p = os.Getenv("MYRIARCH_CONFIG")
		}
		if p == "" {
			return adminclient.Settings{}, nil
		}
		file, lines, problems, err := decodeConfigFile(p)
		if err != nil {
			return adminclient.Settings{}, err
		}
		if len(problems) > 0 {
			return adminclient.Settings{}, &yamlstrict.Error{File: p, Problems: problems}
		}
		var s adminclient.Settings
		if lines[settingIndex("admin-listen")] > 0 {
			s.Admin = "http://" + dialable(file.AdminListen)
		}
		if lines[settingIndex("data-dir")] > 0 {
			s.DataDir = file.DataDir
		}
		if lines[settingIndex("admin-token-file")] > 0 {
			s.TokenFile = file.AdminTokenFile
		}
		return s, nil
	})
}

// dialable turns a listen address into one to connect to on this host:
// every interface (":4321", "0.0.0.0:4321", "[::]:4321") is reached on
// loopback.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
