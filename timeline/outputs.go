package timeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Named is a flag that names a file iopath writes (-o, --timeline,
// --report, --ready-file); Given says the flag was on the command line
// (an empty Path given is refused, not taken as absent).
type Named struct {
	Flag, Path string
	Given      bool
}

// CheckOutputs refuses, in one line, an empty path given, two flags that
// name one file (only the last writer's output would be left in it), and
// a regular file that is also iopath's stdout or stderr (`--timeline f …
// > f`, `-o f … 2> f`): the file's truncation or replacement would
// destroy what the command and iopath print there.
func CheckOutputs(stdout, stderr io.Writer, outs ...Named) error {
	for i, a := range outs {
		if a.Given && a.Path == "" {
			return fmt.Errorf("%s \"\" is an empty path: give a file name (e.g. %s %s), or drop %s", a.Flag, a.Flag, defaultName(a.Flag), a.Flag)
		}
		if a.Path == "" {
			continue
		}
		for _, b := range outs[:i] {
			if b.Path != "" && samePath(a.Path, b.Path) {
				return fmt.Errorf("%s and %s both name %s: give them different files", b.Flag, a.Flag, b.Path)
			}
		}
		if err := CheckNotStd(a.Flag, a.Path, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

// CheckNotStd refuses path (of flag) when it is the regular file that
// iopath's stdout or stderr writes (same device and inode; `/dev/stdout`
// too): writing it as well would destroy what is printed there.
func CheckNotStd(flag, path string, stdout, stderr io.Writer) error {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	for _, s := range []struct {
		name, redir string
		w           io.Writer
	}{{"standard output", ">", stdout}, {"standard error", "2>", stderr}} {
		f, ok := s.w.(*os.File)
		if !ok {
			continue
		}
		if fst, err := f.Stat(); err == nil && os.SameFile(st, fst) {
			return fmt.Errorf("%s %s is also iopath's %s (%s %s): give %s another file, or redirect the %s elsewhere", flag, path, s.name, s.redir, path, flag, s.name)
		}
	}
	return nil
}

// samePath says whether a and b name one file: the same absolute path
// once symbolic links are followed (to a file not there yet too: `-o x
// --timeline L` with L → x, before x exists, wrote the timeline over the
// records), or the same existing inode.
func samePath(a, b string) bool {
	aa, errA := resolved(a)
	bb, errB := resolved(b)
	if errA == nil && errB == nil && aa == bb {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// resolved is the absolute path p names with its symbolic links followed,
// including a last one that points to a file not created yet (which
// filepath.EvalSymlinks refuses): where writing p would create the file
// (outputTarget follows the links).
func resolved(p string) (string, error) {
	t, err := outputTarget("", p)
	if err != nil {
		return "", err
	}
	if t, err = filepath.Abs(t); err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(t); err == nil {
		return r, nil
	}
	// Not there: its directory's real path and its name.
	dir, err := filepath.EvalSymlinks(filepath.Dir(t))
	if err != nil {
		return t, nil
	}
	return filepath.Join(dir, filepath.Base(t)), nil
}
