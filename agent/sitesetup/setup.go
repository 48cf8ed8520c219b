package sitesetup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/myriarch/myriarch/agent/install/binary"
	"github.com/myriarch/myriarch/agent/unpack"
	"github.com/myriarch/myriarch/agent/verify"
	"github.com/myriarch/myriarch/internal/filehash"
	"github.com/myriarch/myriarch/internal/fileremove"
)

// UpdaterService is the updater's Windows service.
const UpdaterService = "myriarch-updater"

// Problems are settings that do not validate: nothing was changed.
type Problems struct{ Err error }

func (p *Problems) Error() string { return p.Err.Error() }
func (p *Problems) Unwrap() error { return p.Err }

// services registers and controls the site's services. The Windows one
// talks to the service manager; elsewhere there is none (--no-start).
type services interface {
	// Supervisor registers the Supervisor's service to run exe with
	// args, restarted on failure, or sets the command of the registered
	// one; changed says it did (or would).
	Supervisor(exe string, args []string, dry bool) (changed bool, err error)
	// Updater registers the updater's service to run exe with conf unless
	// one is registered; warning says what was registered otherwise than
	// asked.
	Updater(exe, conf string, dry bool) (changed bool, warning string, err error)
	// Run starts the service when it is stopped, and restarts it when
	// restart and it runs, and waits until it runs; it returns what it
	// did, or why the service does not run.
	Run(name string, restart, dry bool) (did string, err error)
	// Stop stops the service when it is registered and runs.
	Stop(name string) error
	// Remove stops and deletes the service; false when none is registered.
	Remove(name string, dry bool) (bool, error)
}

// run is one setup or removal: what it changed, and where it says so.
type run struct {
	s        *Settings
	l        Layout
	out      io.Writer
	svc      services
	changes  int
	sup, upd bool // the Supervisor's, the updater's files changed
}

func (r *run) say(format string, args ...any) { fmt.Fprintf(r.out, format+"\n", args...) }

func (r *run) changed(group string) {
	r.changes++
	switch group {
	case "sup":
		r.sup = true
	case "upd":
		r.upd = true
	}
}

// Install sets the host up as s says, telling out what it does. Settings
// that do not validate are a *Problems, before anything is read or
// changed; an artifact that does not check out fails before the first
// change.
func Install(ctx context.Context, s Settings, out io.Writer) error {
	if err := s.Validate(); err != nil {
		return &Problems{err}
	}
	r := &run{s: &s, l: NewLayout(s.Root), out: out, svc: newServices()}
	return r.install(ctx)
}

func (r *run) install(ctx context.Context) error {
	s, l := r.s, r.l
	keys, err := verify.ParseKeys([]string{s.MinisignKey})
	if err != nil {
		return fmt.Errorf("--minisign-key: %w", err)
	}
	work, err := os.MkdirTemp("", "myriarch-setup.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if s.DryRun {
		r.say("plan (dry run, nothing is changed):")
	}
	r.say("mode %s, endpoint %s, artifacts from %s", s.Mode, s.Endpoint(), s.Artifacts)
	// Every artifact is checked before the first change.
	paths := map[string]string{}
	for _, name := range s.artifacts() {
		p, err := checkArtifact(s.Artifacts, name, keys)
		if err != nil {
			return err
		}
		paths[name] = p
	}
	r.say("checked (SHA-256 and minisign): %s", strings.Join(s.artifacts(), " "))
	var unpacked string
	if s.Mode == "binary" {
		if unpacked, err = unpackCollector(ctx, paths[CollectorArtifact(s.CollectorVersion)], work, s.CollectorVersion); err != nil {
			return err
		}
	}
	dirs := []string{l.BinDir, l.EtcM, l.EtcO, l.Storage, l.State}
	if s.Mode == "binary" {
		dirs = append(dirs, filepath.Join(l.CollDir, "versions"))
	}
	for _, d := range dirs {
		if err := r.dir(d); err != nil {
			return err
		}
	}
	if s.Mode == "binary" {
		if err := r.collector(paths[CollectorArtifact(s.CollectorVersion)], unpacked); err != nil {
			return err
		}
		if err := r.putFile(paths[SupervisorArtifact()], nil, l.SupExe, "sup", false); err != nil {
			return err
		}
	}
	// The verifier goes first, so that a new updater never starts without it.
	if err := r.putFile(paths[SigstoreArtifact()], nil, l.SigExe, "upd", false); err != nil {
		return err
	}
	if err := r.putFile(paths[UpdaterArtifact()], nil, l.UpdExe, "upd", false); err != nil {
		return err
	}
	if err := r.putFile("", []byte(s.Token+"\n"), l.Token, "upd", true); err != nil {
		return err
	}
	if err := r.putFile("", []byte(SupervisorYAML(s, l)), l.SupConf, "sup", true); err != nil {
		return err
	}
	if err := r.putFile("", []byte(UpdaterYAML(s, l)), l.UpdConf, "upd", false); err != nil {
		return err
	}
	if err := r.services(); err != nil {
		return err
	}
	switch {
	case s.DryRun:
		r.say("dry run: nothing was changed")
	case r.changes == 0:
		r.say("nothing changed: the installation already matches these settings")
	default:
		r.say("done: %d change(s)", r.changes)
	}
	return nil
}

func (r *run) dir(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", path)
		}
		return nil
	}
	r.changed("")
	if r.s.DryRun {
		r.say("would create directory %s", path)
		return nil
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	r.say("created %s", path)
	return nil
}

// collector installs the version in versions\<v> (unless the same is
// there) and switches current to it, the Supervisor stopped meanwhile: a
// junction cannot be replaced atomically.
func (r *run) collector(archive, unpacked string) error {
	v, root := r.s.CollectorVersion, r.l.CollDir
	vdir := filepath.Join(root, "versions", v)
	want, err := filehash.SHA256(filepath.Join(unpacked, CollectorExe))
	if err != nil {
		return err
	}
	if got, err := filehash.SHA256(filepath.Join(vdir, CollectorExe)); err != nil || got != want {
		r.changed("sup")
		if r.s.DryRun {
			r.say("would unpack %s into %s", filepath.Base(archive), vdir)
		} else {
			if _, err := unpack.Unpack(archive, filepath.Join(root, "versions"), v, unpack.Options{Executable: CollectorExe,
				MaxEntrySize: maxArchiveEntry, MaxTotalSize: maxArchiveTotal}); err != nil {
				return fmt.Errorf("installing collector %s: %w", v, err)
			}
			r.say("installed collector %s in %s", v, vdir)
		}
	}
	cur, err := binary.ReadCurrent(root)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(root, "current"), err)
	}
	if cur == v {
		return nil
	}
	r.changed("sup")
	if r.s.DryRun {
		r.say("would switch %s to %s", filepath.Join(root, "current"), vdir)
		return nil
	}
	if !r.s.NoStart {
		if err := r.svc.Stop(SupervisorService); err != nil {
			return err
		}
	}
	if err := binary.SwitchCurrent(root, v); err != nil {
		return err
	}
	r.say("switched %s to %s", filepath.Join(root, "current"), vdir)
	return nil
}

// putFile installs the file at src (or content) as dest unless dest holds
// it already (and, for a secret, is readable by SYSTEM and Administrators
// only): through a file beside dest, synced, then renamed over it.
func (r *run) putFile(src string, content []byte, dest, group string, secret bool) error {
	var want string
	if src != "" {
		h, err := filehash.SHA256(src)
		if err != nil {
			return err
		}
		want = h
	} else {
		sum := sha256.Sum256(content)
		want = hex.EncodeToString(sum[:])
	}
	if got, err := filehash.SHA256(dest); err == nil && got == want && (!secret || protected(dest)) {
		return nil
	}
	r.changed(group)
	if r.s.DryRun {
		if _, err := os.Stat(dest); err == nil {
			r.say("would update %s", dest)
		} else {
			r.say("would write %s", dest)
		}
		return nil
	}
	if strings.HasSuffix(dest, ".exe") && !r.s.NoStart {
		// A running executable cannot be replaced on Windows.
		name := UpdaterService
		if group == "sup" {
			name = SupervisorService
		}
		if err := r.svc.Stop(name); err != nil {
			return err
		}
	}
	if src != "" {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		content = b
	}
	if err := writeFile(dest, content, secret); err != nil {
		return fmt.Errorf("writing %s: %w", dest, err)
	}
	r.say("wrote %s", dest)
	if secret && !protected(dest) {
		// Set, and not kept: the file system keeps no access lists (Wine's
		// reports one from the Unix permissions). Said, and written again
		// at the next run, which checks again.
		r.say("warning: %s: its access list was set to SYSTEM and Administrators only and not kept: the file system keeps none", dest)
	}
	return nil
}

func writeFile(dest string, content []byte, secret bool) (err error) {
	tmp := filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+fmt.Sprintf(".tmp.%d", os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = io.Copy(f, bytes.NewReader(content)); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if secret {
		err = protect(tmp)
	} else {
		err = os.Chmod(tmp, 0o755)
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}

// services registers the services and runs them, restarting those whose
// files changed.
func (r *run) services() error {
	s, l := r.s, r.l
	if s.NoStart {
		r.say("services not registered (--no-start): %s %s", SupervisorService, UpdaterService)
		return nil
	}
	names := []string{UpdaterService}
	if s.Mode == "binary" {
		names = []string{SupervisorService, UpdaterService}
		ch, err := r.svc.Supervisor(l.SupExe, []string{"--config", l.SupConf}, s.DryRun)
		if err != nil {
			return err
		}
		if ch {
			r.changed("sup")
			r.say(map[bool]string{true: "would register service ", false: "registered service "}[s.DryRun] + SupervisorService)
		}
	}
	ch, warning, err := r.svc.Updater(l.UpdExe, l.UpdConf, s.DryRun)
	if err != nil {
		return err
	}
	if warning != "" {
		r.say("warning: %s", warning)
	}
	if ch {
		r.changed("upd")
		r.say(map[bool]string{true: "would register service ", false: "registered service "}[s.DryRun] + UpdaterService)
	}
	// Every service is run, also after another failed to: each failure
	// is reported.
	var errs []error
	for _, n := range names {
		restart := r.upd
		if n == SupervisorService {
			restart = r.sup
		}
		did, err := r.svc.Run(n, restart, s.DryRun)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if did != "" {
			r.say("%s %s", did, n)
		}
	}
	return errors.Join(errs...)
}

// Uninstall removes what Install put on the host: the services, the
// executables and the collector; with purge the configuration and data.
func Uninstall(s Settings, purge bool, out io.Writer) error {
	var errs []error
	if s.Root != "" && !s.NoStart {
		errs = append(errs, errors.New("--root needs --no-start: services can only be registered on this system's root"))
	}
	if err := errors.Join(errs...); err != nil {
		return &Problems{err}
	}
	r := &run{s: &s, l: NewLayout(s.Root), out: out, svc: newServices()}
	l := r.l
	if !s.NoStart {
		for _, n := range []string{UpdaterService, SupervisorService} {
			gone, err := r.svc.Remove(n, s.DryRun)
			if err != nil {
				return err
			}
			if gone {
				r.say(map[bool]string{true: "would stop and remove service ", false: "removed service "}[s.DryRun] + n)
			}
		}
	}
	if err := r.remove(filepath.Join(l.CollDir, "current"), l.UpdExe, l.SigExe, l.SupExe, l.CollDir); err != nil {
		return err
	}
	for _, d := range []string{l.BinDir, l.ProgDir} {
		if es, err := os.ReadDir(d); err == nil && len(es) == 0 {
			if err := r.remove(d); err != nil {
				return err
			}
		}
	}
	if purge {
		if err := r.remove(l.EtcM, l.SupConf, l.Storage); err != nil {
			return err
		}
	} else {
		r.say("kept configuration and data (%s, %s, %s); --purge removes them", l.EtcM, l.SupConf, l.Storage)
	}
	if s.DryRun {
		r.say("dry run: nothing was changed")
	}
	return nil
}

func (r *run) remove(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if r.s.DryRun {
			r.say("would remove %s", p)
			continue
		}
		// A junction or link goes alone, never what it points at.
		if err := os.Remove(p); err != nil {
			if err := fileremove.Tree(p); err != nil {
				return fmt.Errorf("removing %s: %w", p, err)
			}
		}
		r.say("removed %s", p)
	}
	return nil
}
