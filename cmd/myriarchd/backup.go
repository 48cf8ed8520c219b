package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/myriarch/myriarch/internal/admincli"
	"github.com/myriarch/myriarch/internal/cmdline"
	"github.com/myriarch/myriarch/server/backup"
	"github.com/myriarch/myriarch/server/store/postgres"
	"github.com/myriarch/myriarch/server/store/sqlite"
)

const backupAbout = `Takes a consistent snapshot of the server's store while it runs (SQLite: an
online copy; PostgreSQL: a repeatable-read copy of myriarch's tables, pg_dump
of them being the alternative) and writes it to FILE as a backup archive: its
manifest records the store, the schema version, the estate revision and the
SHA-256 of every file. The archive is checked before FILE is written.`

const restoreAbout = `Restores a backup archive into an empty store: --data-dir for a SQLite
archive, --store for a PostgreSQL one. The archive is checked completely
first; a corrupt archive, one of a newer schema or a store that holds data
is refused and nothing is written. Run it with the server stopped, then
start myriarchd on the restored store.`

// backupLeaf is "backup": the archive streamed from the running server
// through the admin API, checked, then written.
func backupLeaf(cli *admincli.Commands) *cmdline.Leaf {
	return &cmdline.Leaf{Synopsis: "backup --out FILE [--force] [flags]", About: backupAbout,
		Setup: func(c *cmdline.Command) func(context.Context, []string) error {
			client := cli.Connect(c.FS)
			out := c.FS.String("out", "", "write the archive to `FILE`")
			force := c.FS.Bool("force", false, "replace FILE when it exists")
			return func(ctx context.Context, args []string) error {
				switch {
				case len(args) > 0:
					return cmdline.Usagef("unexpected argument %q", args[0])
				case *out == "":
					return cmdline.Usagef("--out is required")
				}
				if _, err := os.Lstat(*out); err == nil && !*force {
					return fmt.Errorf("%s exists; --force replaces it", *out)
				}
				cl, err := client()
				if err != nil {
					return err
				}
				m, size, err := takeBackup(func(w io.Writer) error {
					resp, err := cl.Streaming.CreateBackup(ctx)
					if err != nil {
						return err
					}
					defer resp.Body.Close()
					_, err = io.Copy(w, resp.Body)
					return err
				}, *out)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.Stdout, "backup %s: %s store, schema %d, estate revision %s, %d files, %d bytes\n",
					*out, m.Backend, m.SchemaVersion, orDash(m.EstateRevision), len(m.Files), size)
				return nil
			}
		}}
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// takeBackup writes what fetch streams to path through a temporary file
// beside it, checked as restore would check it, then renamed into place.
func takeBackup(fetch func(io.Writer) error, path string) (backup.Manifest, int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-")
	if err != nil {
		return backup.Manifest{}, 0, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return backup.Manifest{}, 0, err
	}
	err = fetch(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return backup.Manifest{}, 0, err
	}
	m, err := checkArchive(tmp.Name())
	if err != nil {
		return backup.Manifest{}, 0, fmt.Errorf("the archive received does not check: %w", err)
	}
	st, err := os.Stat(tmp.Name())
	if err != nil {
		return backup.Manifest{}, 0, err
	}
	return m, st.Size(), os.Rename(tmp.Name(), path)
}

// checkArchive reads the archive at path completely into a scratch
// directory, checking every file.
func checkArchive(path string) (backup.Manifest, error) {
	dir, err := os.MkdirTemp("", "myriarchd-check-")
	if err != nil {
		return backup.Manifest{}, err
	}
	defer os.RemoveAll(dir)
	return readArchive(path, dir)
}

func readArchive(path, dir string) (backup.Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return backup.Manifest{}, err
	}
	defer f.Close()
	return backup.Read(f, dir)
}

func restoreCmd(args []string, stdout, stderr io.Writer) int {
	c := cmdline.New("myriarchd", "restore", "restore FILE (--data-dir DIR | --store postgres://…)", restoreAbout)
	dataDir := c.FS.String("data-dir", "", "restore a SQLite archive into `DIR` (the server's --data-dir), which holds no database yet")
	storeURL := c.FS.String("store", "", "restore a PostgreSQL archive into the database at `URL`, which holds no myriarch tables yet")
	pos, code, done := c.ParseMixed(args, stdout, stderr)
	if done {
		return code
	}
	switch {
	case len(pos) != 1:
		return c.UsageError(stderr, "one archive FILE is required")
	case (*dataDir == "") == (*storeURL == ""):
		return c.UsageError(stderr, "give either --data-dir or --store")
	}
	scratch, err := os.MkdirTemp("", "myriarchd-restore-")
	if err != nil {
		fmt.Fprintln(stderr, "myriarchd restore:", err)
		return 1
	}
	defer os.RemoveAll(scratch)
	m, err := readArchive(pos[0], scratch)
	if err != nil {
		fmt.Fprintf(stderr, "myriarchd restore: %s: %v\n", pos[0], err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	target := *dataDir
	if *dataDir != "" {
		err = sqlite.Restore(ctx, *dataDir, scratch, m.SnapshotInfo)
	} else {
		target = postgres.Redact(*storeURL)
		err = postgres.Restore(ctx, *storeURL, scratch, m.SnapshotInfo)
	}
	if err != nil {
		fmt.Fprintln(stderr, "myriarchd restore:", err)
		return 1
	}
	fmt.Fprintf(stdout, "restored %s into %s: %s store, schema %d (taken %s, estate revision %s)\n",
		pos[0], target, m.Backend, m.SchemaVersion, m.Created.Format(time.RFC3339), orDash(m.EstateRevision))
	return 0
}
