package main

import (
	"net"

	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/yamlstrict"
)

// serverSettings reads where the server is from its own configuration
// file (--config, MYRIARCH_CONFIG of the client commands): its
// admin_listen, data_dir and admin_token_file, so that
// `myriarchd agents list --config /etc/myriarch/myriarchd.yaml` finds a
// server that `serve --config` with the same file runs.
func serverSettings(p string) (adminclient.Settings, error) {
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
