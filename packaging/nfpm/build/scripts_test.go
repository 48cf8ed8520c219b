package main

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMaintainerScriptsShellcheckClean(t *testing.T) {
	sc := needTool(t, "shellcheck")
	scripts, _ := filepath.Glob(packaging + "/nfpm/scripts/*.sh")
	if len(scripts) != 7 {
		t.Fatalf("found scripts %v", scripts)
	}
	if out, err := exec.Command(sc, append([]string{"--shell=sh", "--severity=style"}, scripts...)...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// host is the machine a maintainer script runs on: its PATH holds nothing but
// stand-ins, which log their calls.
type host struct {
	systemd bool     // systemd is running (/run/systemd/system exists)
	active  bool     // systemctl is-active answers "active"
	files   []string // environment variables naming files that exist (the rest do not)
	users   []string // users getent knows
	groups  []string // groups getent knows
	tools   []string // stand-ins on PATH besides systemctl and getent
	// noSystemctl leaves systemctl off PATH (a host without systemd).
	noSystemctl bool
	// commands replaces the body of a stand-in (after its call is logged).
	commands map[string]string
}

// scriptRun is what a script did: its exit error, its output and the commands it ran.
type scriptRun struct {
	err   error
	out   string
	calls []string
}

// fileVars are the files the scripts look at, by the environment variable that moves them.
var fileVars = []string{"MYRIARCH_UPDATER_CONFIG", "MYRIARCHD_TLS_KEY_FILE"}

func runScript(t *testing.T, script string, h host, args ...string) scriptRun {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	log := filepath.Join(dir, "calls.log")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	isActive := "3"
	if h.active {
		isActive = "0"
	}
	bodies := map[string]string{
		"systemctl": `[ "$1" = is-active ] && exit ` + isActive + "\nexit 0",
		"getent": `case $1 in passwd) known=" ` + strings.Join(h.users, " ") + ` ";; group) known=" ` + strings.Join(h.groups, " ") + ` ";; esac
case $known in *" $2 "*) echo "$2:x:999:999::/:/usr/sbin/nologin"; exit 0;; esac
exit 2`,
	}
	for _, tool := range h.tools {
		bodies[tool] = "exit 0"
	}
	for tool, body := range h.commands {
		bodies[tool] = body
	}
	if h.noSystemctl {
		delete(bodies, "systemctl")
	}
	for tool, body := range bodies {
		logged := ""
		if tool != "getent" {
			logged = "echo \"" + tool + " $*\" >> " + log + "\n"
		}
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\n"+logged+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runDir := filepath.Join(dir, "run-systemd")
	if h.systemd {
		if err := os.Mkdir(runDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + bin, "HOME=" + dir, "MYRIARCH_SYSTEMD_RUN=" + runDir}
	for _, v := range fileVars {
		p := filepath.Join(dir, strings.ToLower(v))
		if slices.Contains(h.files, v) {
			if err := os.WriteFile(p, []byte("x\n"), 0o640); err != nil {
				t.Fatal(err)
			}
		}
		env = append(env, v+"="+p)
	}
	cmd := exec.Command("sh", append([]string{filepath.Join(packaging, "nfpm/scripts", script)}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	r := scriptRun{err: err, out: string(out)}
	if b, err := os.ReadFile(log); err == nil {
		r.calls = strings.Split(strings.TrimSpace(string(b)), "\n")
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return r
}

// scriptCase is one run of a script and the commands it must run.
type scriptCase struct {
	name   string
	script string
	args   []string
	host   host
	want   []string
	output string // in the output ("" nothing)
	fails  bool
}

func runCases(t *testing.T, cases []scriptCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runScript(t, c.script, c.host, c.args...)
			if (r.err != nil) != c.fails {
				t.Fatalf("%s %v: error %v, want failure %v\n%s", c.script, c.args, r.err, c.fails, r.out)
			}
			if !slices.Equal(r.calls, c.want) {
				t.Errorf("calls = %q, want %q", r.calls, c.want)
			}
			if c.output == "" && r.out != "" {
				t.Errorf("unexpected output:\n%s", r.out)
			}
			if !strings.Contains(r.out, c.output) {
				t.Errorf("output lacks %q:\n%s", c.output, r.out)
			}
		})
	}
}

func TestUpdaterPostinstallEnablesButStartsOnlyWhenConfigured(t *testing.T) {
	const script = "updater-postinstall.sh"
	configured := []string{"MYRIARCH_UPDATER_CONFIG"}
	runCases(t, []scriptCase{
		{name: "fresh install", script: script, args: []string{"configure"}, host: host{systemd: true},
			want:   []string{"systemctl daemon-reload", "systemctl enable myriarch-updater.service"},
			output: "it starts once"},
		{name: "configured", script: script, args: []string{"configure"}, host: host{systemd: true, files: configured},
			want: []string{"systemctl daemon-reload", "systemctl enable myriarch-updater.service", "systemctl restart myriarch-updater.service"}},
		{name: "no systemd running (image build)", script: script, args: []string{"configure"}, host: host{files: configured},
			want: []string{"systemctl enable myriarch-updater.service"}, output: "it starts once"},
	})
}

func TestMyriarchdPostinstallStartsOnlyWithTheTLSKey(t *testing.T) {
	const script = "myriarchd-postinstall.sh"
	key := []string{"MYRIARCHD_TLS_KEY_FILE"}
	enable := []string{"systemctl daemon-reload", "systemctl enable myriarchd.service", "systemctl is-active --quiet myriarchd.service"}
	cases := []scriptCase{
		{name: "fresh install without a key", host: host{systemd: true},
			want: enable, output: "install -m 0640 -g myriarch server.key "},
		{name: "fresh install with the key", host: host{systemd: true, files: key},
			want: append(slices.Clone(enable), "systemctl start myriarchd.service")},
		{name: "upgrade of a running server", host: host{systemd: true, active: true},
			want: append(slices.Clone(enable), "systemctl restart myriarchd.service")},
		{name: "no systemd running (image build)", host: host{},
			want: []string{"systemctl enable myriarchd.service"}, output: "tls.crt"},
		{name: "no systemd running, key in place", host: host{files: key},
			want: []string{"systemctl enable myriarchd.service"}},
		{name: "no systemctl", host: host{noSystemctl: true}},
	}
	for i := range cases {
		cases[i].script = script
		cases[i].args = []string{"configure"}
	}
	runCases(t, cases)
}

func TestPreremoveStopsOnlyOnRemoval(t *testing.T) {
	for _, unit := range []string{"myriarch-updater", "myriarchd"} {
		script := strings.TrimPrefix(unit, "myriarch-") + "-preremove.sh"
		var cases []scriptCase
		for _, arg := range []string{"remove", "purge", "0"} {
			cases = append(cases, scriptCase{name: unit + " " + arg, script: script, args: []string{arg},
				host: host{systemd: true}, want: []string{"systemctl disable --now " + unit + ".service"}})
		}
		for _, arg := range []string{"upgrade", "1"} {
			cases = append(cases, scriptCase{name: unit + " " + arg, script: script, args: []string{arg},
				host: host{systemd: true}})
		}
		runCases(t, cases)
	}
}

func TestPostremoveReloadsSystemd(t *testing.T) {
	for _, script := range []string{"updater-postremove.sh", "myriarchd-postremove.sh"} {
		runCases(t, []scriptCase{
			{name: script, script: script, args: []string{"remove"}, host: host{systemd: true}, want: []string{"systemctl daemon-reload"}},
			{name: script + " without systemd", script: script, args: []string{"remove"}},
		})
	}
}

var (
	groupadd = "groupadd --system myriarch"
	useradd  = "useradd --system --gid myriarch --home-dir /var/lib/myriarch --no-create-home --shell /usr/sbin/nologin --comment myriarch server myriarch"
	adduser  = "adduser --system --group --home /var/lib/myriarch --no-create-home --shell /usr/sbin/nologin --gecos myriarch server myriarch"
)

func TestMyriarchdPreinstallCreatesTheSystemUser(t *testing.T) {
	const script = "myriarchd-preinstall.sh"
	shadow := []string{"useradd", "groupadd", "adduser"}
	cases := []scriptCase{
		{name: "deb install", args: []string{"install"}, host: host{tools: shadow}, want: []string{groupadd, useradd}},
		{name: "rpm install", args: []string{"1"}, host: host{tools: shadow}, want: []string{groupadd, useradd}},
		{name: "group left by a removed user", args: []string{"install"}, host: host{tools: shadow, groups: []string{"myriarch"}},
			want: []string{useradd}},
		{name: "upgrade", args: []string{"upgrade", "1.2.2"}, host: host{tools: shadow, users: []string{"myriarch"}, groups: []string{"myriarch"}}},
		{name: "reinstall", args: []string{"2"}, host: host{tools: shadow, users: []string{"myriarch"}}},
		{name: "only Debian's adduser", args: []string{"install"}, host: host{tools: []string{"adduser"}}, want: []string{adduser}},
		{name: "neither", args: []string{"install"}, fails: true, output: "neither useradd nor adduser"},
		{name: "useradd fails", args: []string{"install"}, host: host{tools: shadow, commands: map[string]string{"useradd": "exit 9"}},
			want: []string{groupadd, useradd}, fails: true},
	}
	for i := range cases {
		cases[i].script = script
	}
	runCases(t, cases)
}

// The preinstall with the real shadow-utils commands, against a copy of this machine's
// user database (useradd --prefix): the user it makes, and nothing changed by a second run.
func TestMyriarchdPreinstallWithShadowUtils(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("useradd --prefix needs root: run the tests as root")
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"passwd", "group", "shadow", "gshadow", "login.defs"} {
		b, err := os.ReadFile(filepath.Join("/etc", f))
		if err != nil {
			t.Fatalf("%v: apt-get install -y passwd", err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc", f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	real := map[string]string{}
	for _, tool := range []string{"useradd", "groupadd"} {
		p := needTool(t, tool)
		real[tool] = "exec " + p + " --prefix " + root + ` "$@"`
	}
	// getent of the copy: name:... lines of etc/passwd or etc/group.
	real["getent"] = `while IFS=: read -r name rest; do [ "$name" = "$2" ] && { echo "$name:$rest"; exit 0; }; done < ` + root + `/etc/$1
exit 2`
	h := host{commands: real}

	r := runScript(t, "myriarchd-preinstall.sh", h, "install")
	if r.err != nil {
		t.Fatalf("preinstall: %v\n%s", r.err, r.out)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(passwd), "\n") {
		if strings.HasPrefix(l, "myriarch:") {
			line = l
		}
	}
	f := strings.Split(line, ":")
	if len(f) != 7 || f[4] != "myriarch server" || f[5] != "/var/lib/myriarch" || f[6] != "/usr/sbin/nologin" {
		t.Fatalf("passwd entry %q", line)
	}
	group, _ := os.ReadFile(filepath.Join(root, "etc/group"))
	if !bytes.Contains(group, []byte("\nmyriarch:x:"+f[3]+":")) {
		t.Errorf("no group myriarch with gid %s:\n%s", f[3], group)
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/myriarch")); !os.IsNotExist(err) {
		t.Errorf("home created (%v); systemd's StateDirectory makes it", err)
	}

	before := snapshotFiles(t, filepath.Join(root, "etc"))
	r = runScript(t, "myriarchd-preinstall.sh", h, "upgrade", "1.2.2")
	if r.err != nil || len(r.calls) != 0 {
		t.Fatalf("second run: %v, calls %q\n%s", r.err, r.calls, r.out)
	}
	if after := snapshotFiles(t, filepath.Join(root, "etc")); !maps.Equal(before, after) {
		t.Error("second run changed the user database")
	}
}

func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		m[e.Name()] = fileDigest(t, filepath.Join(dir, e.Name()))
	}
	return m
}
