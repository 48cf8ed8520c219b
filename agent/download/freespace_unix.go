//go:build linux || darwin || freebsd || netbsd || openbsd

package download

import "golang.org/x/sys/unix"

func freeSpace(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
