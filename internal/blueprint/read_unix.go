//go:build unix

package blueprint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// readOSFile reads dir/rel into buf as readInto(os.DirFS(dir), rel, buf)
// would, errors included, with plain system calls: an os.File costs an
// allocation and, on open, a poller registration attempt and an fcntl,
// which was a fifth of the load time of a large estate.
func readOSFile(dir, rel string, buf []byte) ([]byte, error) {
	name := dir + string(os.PathSeparator) + rel // what os.DirFS opens
	var fd int
	var err error
	for {
		// Non-blocking: a FIFO put in the file's place since the walk
		// checked it must not hang the load (the fstat below refuses it).
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return buf, fmt.Errorf("cannot read: %w", &fs.PathError{Op: "open", Path: rel, Err: err})
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return buf, fmt.Errorf("cannot read: %w", &fs.PathError{Op: "fstat", Path: rel, Err: err})
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return buf, errors.New("not a regular file (special files are not read)")
	}
	return fill(buf, func(p []byte) (int, error) {
		for {
			n, err := syscall.Read(fd, p)
			switch {
			case err == syscall.EINTR:
				continue
			case err != nil:
				return 0, &fs.PathError{Op: "read", Path: name, Err: err}
			case n == 0:
				return 0, io.EOF
			}
			return n, nil
		}
	})
}
