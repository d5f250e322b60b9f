package workloads

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirError explains why a file could not be created in dir, with the fix
// in terms of flag (--dir or --file).
func dirError(dir, flag string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist: create it first or choose another %s", dir, flag)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s is not a directory: give an existing directory with %s", dir, flag)
	case errors.Is(err, unix.EROFS):
		return fmt.Errorf("cannot create a file in %s: it is on a read-only filesystem; choose a writable place with %s", dir, flag)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("cannot create a file in %s: permission denied; choose a directory you can write to with %s", dir, flag)
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return fmt.Errorf("cannot create a file in %s: no space left (%w); free space or choose another place with %s", dir, errnoOf(err), flag)
	}
	return fmt.Errorf("cannot create a file in %s: %w", dir, err)
}

// fullError explains running out of space after written bytes, with the fix.
func fullError(during, path string, written int64, err error) error {
	return fmt.Errorf("disk full (%w) %s %s after writing %d bytes (%s): free space on %s (%s), use a smaller --size, or --dir on a larger filesystem",
		errnoOf(err), during, path, written, FormatSize(written), filepath.Dir(path), fsName(path))
}

// isFull reports whether err means the filesystem or quota is out of space.
func isFull(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}

// errnoOf returns the errno inside err, or err itself, for short messages.
func errnoOf(err error) error {
	var e unix.Errno
	if errors.As(err, &e) {
		return fmt.Errorf("%s: %w", unix.ErrnoName(e), e)
	}
	return err
}
