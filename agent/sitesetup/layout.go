package sitesetup

import (
	"os"
	"path/filepath"
)

// Layout is where a site's files go: under %ProgramFiles%\Myriarch and
// %ProgramData%, or under a prefix.
type Layout struct {
	ProgDir, BinDir, CollDir string
	EtcM, EtcO, Storage      string
	State                    string
	SupConf, UpdConf, Token  string
	SupExe, UpdExe, SigExe   string
}

// NewLayout is the layout under root, or the system's when root is "".
func NewLayout(root string) Layout {
	prog := filepath.Join(os.Getenv("ProgramFiles"), "Myriarch")
	data := os.Getenv("ProgramData")
	if root != "" {
		prog = filepath.Join(root, "Program Files", "Myriarch")
		data = filepath.Join(root, "ProgramData")
	}
	l := Layout{ProgDir: prog, BinDir: filepath.Join(prog, "bin"), CollDir: filepath.Join(prog, "collector"),
		EtcM: filepath.Join(data, "Myriarch"), EtcO: filepath.Join(data, "Otelcol")}
	l.Storage = filepath.Join(l.EtcO, "Supervisor")
	l.State = filepath.Join(l.EtcM, "state")
	l.SupConf = filepath.Join(l.EtcO, "supervisor.yaml")
	l.UpdConf = filepath.Join(l.EtcM, "updater.yaml")
	l.Token = filepath.Join(l.EtcM, "token")
	l.SupExe = filepath.Join(l.BinDir, "opampsupervisor.exe")
	l.UpdExe = filepath.Join(l.BinDir, "myriarch-updater.exe")
	// The updater runs its Sigstore verifier from its own directory.
	l.SigExe = filepath.Join(l.BinDir, "myriarch-sigstore.exe")
	return l
}
