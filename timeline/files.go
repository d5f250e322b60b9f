package timeline

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/tracer/kernel"
)

// Files writes the --timeline/--report files as records arrive, into
// temp files beside them created before tracing starts (a bad path fails
// first, with nothing traced); end renames them into place, or removes
// them if the trace did not get to its summary.
type Files struct {
	tl     *Timeline
	report *Report
	files  []*os.File
	finals []string
	flags  []string // the flag of each file: --timeline, --report
	sums   int
	lost   uint64 // ring-buffer records the summaries say were dropped
	ended  bool
	// Stale lists temp files of earlier runs that died (SIGKILL) before
	// they could remove them; OpenFiles removed them.
	Stale []string
}

// OpenFiles creates the outputs asked for: a Chrome JSON trace at trace and
// an HTML report at report ("": none; nil, nil if neither).
func OpenFiles(trace, report, title string) (*Files, error) {
	if trace == "" && report == "" {
		return nil, nil
	}
	if trace != "" && report != "" && filepath.Clean(trace) == filepath.Clean(report) {
		return nil, fmt.Errorf("--timeline and --report both name %s: give them different files", trace)
	}
	o := &Files{}
	var outs []Output
	for _, x := range []struct{ flag, path string }{{"--timeline", trace}, {"--report", report}} {
		if x.path == "" {
			continue
		}
		final, err := outputTarget(x.flag, x.path)
		if err != nil {
			o.Abort()
			return nil, err
		}
		o.Stale = append(o.Stale, removeStale(final)...)
		file, err := createBeside(x.flag, final)
		if err != nil {
			o.Abort()
			return nil, err
		}
		o.files = append(o.files, file)
		o.finals = append(o.finals, final)
		o.flags = append(o.flags, x.flag)
		if x.flag == "--timeline" {
			outs = append(outs, NewChrome(file))
		} else {
			o.report = NewReport(file, title, 0)
			outs = append(outs, o.report)
		}
	}
	o.tl = New(outs...)
	return o, nil
}

// outputTarget is the file that the output flag names at path is renamed
// onto: path, or, when path is a symbolic link, the file it leads to (the
// link stays and names the new file; a link to a file not there yet gets
// it created). A path that is, or leads to, no regular file (a device node
// such as /dev/null, a FIFO, a socket) is refused: the rename would
// replace the node itself with a regular file.
func outputTarget(flag, path string) (string, error) {
	target := path
	for range 40 { // the kernel's limit on links followed (ELOOP)
		fi, err := os.Lstat(target)
		if err != nil {
			return target, nil // created (CheckOutputPath says what is wrong)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if kind := nodeKind(fi.Mode()); kind != "" {
				return "", fmt.Errorf("%s %s is a %s, not a regular file, and would be replaced by one: give a file name (e.g. %s)", flag, path, kind, defaultName(flag))
			}
			return target, nil
		}
		to, err := os.Readlink(target)
		if err != nil {
			return "", fmt.Errorf("%s %s: %w", flag, path, err)
		}
		if !filepath.IsAbs(to) && kernel.PseudoFS(filepath.Dir(target)) == "proc" {
			// A /proc/PID/fd link to no path ("pipe:[123]", "socket:[…]":
			// /dev/stdout on a pipe): what it opens says what it is.
			kind := "special file"
			if st, err := os.Stat(target); err == nil && nodeKind(st.Mode()) != "" {
				kind = nodeKind(st.Mode())
			}
			return "", fmt.Errorf("%s %s is a %s (%s), not a regular file, and would be replaced by one: give a file name (e.g. %s)", flag, path, kind, to, defaultName(flag))
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(target), to)
		}
		target = to
	}
	return "", fmt.Errorf("%s %s: too many levels of symbolic links: give the path of a regular file", flag, path)
}

// nodeKind names a file type that is neither a regular file nor a
// directory (CheckOutputPath refuses directories), "" for those two.
func nodeKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m.IsRegular(), m.IsDir():
		return ""
	}
	return "special file"
}

// bareErr is err without its *fs.PathError's operation and path.
func bareErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CheckOutputPath says in one line what is wrong with path as an output
// file of flag (nil if nothing is found before trying): the name of a
// directory, a parent that is missing or not a directory, or, when the
// file is to be created (create), a parent on a kernel filesystem that holds
// no files one can create (proc, sysfs: creating there fails with ENOENT
// or EACCES, which alone would say the wrong thing).
func CheckOutputPath(flag, path string, create bool) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("%s %s is a directory: give a file name (e.g. %s)", flag, path, filepath.Join(path, defaultName(flag)))
	case strings.HasSuffix(path, "/"):
		return fmt.Errorf("%s %s ends in \"/\", which names a directory (and there is none): give a file name (e.g. %s)", flag, path, filepath.Join(path, defaultName(flag)))
	}
	if dst, err := os.Stat(dir); err != nil && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: directory %s does not exist: create it or choose another path", flag, path, dir)
	} else if err == nil && !dst.IsDir() {
		return fmt.Errorf("%s %s: %s is not a directory: choose another path", flag, path, dir)
	}
	if kfs := kernel.PseudoFS(dir); create && kfs != "" {
		return fmt.Errorf("%s %s: %s is on %s, a kernel filesystem that holds no files of ours: choose a directory on a disk or a tmpfs", flag, path, dir, kfs)
	}
	return nil
}

// createBeside creates a temp file in path's directory, saying in one line
// what is wrong with the path if it cannot.
func createBeside(flag, path string) (*os.File, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if err := CheckOutputPath(flag, path, true); err != nil {
		return nil, err
	}
	file, err := os.CreateTemp(dir, tempPrefix(base, os.Getpid())+"*.tmp")
	switch {
	case err == nil:
		if err := file.Chmod(0o644); err != nil { // CreateTemp makes it 0600
			file.Close()
			os.Remove(file.Name())
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
		return file, nil
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("%s %s: cannot create a file in %s (%w): choose a writable directory", flag, path, dir, bareErr(err))
	}
	return nil, fmt.Errorf("%s %s: %w: choose another path", flag, path, err)
}

// defaultName is the file name suggested for flag's directory.
func defaultName(flag string) string {
	switch flag {
	case "--report":
		return "report.html"
	case "--timeline":
		return "trace.json"
	case "--ready-file":
		return "iopath.ready"
	}
	return "iopath.out"
}

// Tee returns out, preceded by the timeline when there is one (o may be nil).
func (o *Files) Tee(out func(any)) func(any) {
	if o == nil {
		return out
	}
	return func(rec any) {
		Feed(o.tl, rec)
		out(rec)
	}
}

// Summary adds a run's summary (o may be nil).
func (o *Files) Summary(s *record.Summary) {
	if o != nil {
		o.sums++
		o.lost += s.LostEvents
		o.tl.Summary(s)
	}
}

// Abort removes the temp files (idempotent; also on SIGINT/SIGTERM).
func (o *Files) Abort() {
	if o == nil || o.ended {
		return
	}
	o.ended = true
	for _, f := range o.files {
		f.Close()
		os.Remove(f.Name())
	}
}

// End finishes the files and moves them into place if the trace reached
// its summary (even when the traced command failed: err is returned as is),
// and removes them otherwise. It says on w what it wrote.
func (o *Files) End(err error, w io.Writer) error {
	if o == nil || o.ended {
		return err
	}
	if o.sums == 0 {
		o.Abort()
		return err
	}
	o.ended = true
	werr := o.tl.Close()
	for i, f := range o.files {
		if e := f.Close(); werr == nil {
			werr = e
		}
		if werr == nil {
			werr = os.Rename(f.Name(), o.finals[i])
		}
		if werr != nil {
			os.Remove(f.Name())
		}
	}
	if werr != nil {
		return errors.Join(err, o.writeError(werr))
	}
	st := o.tl.Stats()
	for _, p := range o.finals {
		fmt.Fprintf(w, "iopath: wrote %s: %s, %s, %s, %s, %s, %s\n", p, render.Count(st.Calls, "call"),
			render.Count(st.Faults, "fault"), render.Count(st.Bios, "bio"),
			render.Count(st.WritebackSlices, "writeback slice"), render.Count(st.DirtySpans, "dirty-page span"),
			render.Count(st.Flows, "arrow"))
	}
	if o.lost > 0 {
		fmt.Fprintf(w, "iopath: timeline: %d ring-buffer records were lost (see the summary): calls and bios of those records are missing from it\n", o.lost)
	}
	if o.report != nil && o.report.Omitted() > 0 {
		fmt.Fprintf(w, "iopath: the report draws the first %d slices and arrows; %d more are only in the --timeline trace\n",
			DefaultReportSlices, o.report.Omitted())
	}
	if st.Overlaps > 0 || st.Forgotten > 0 {
		fmt.Fprintf(w, "iopath: timeline: %d slices share a lane they overlap (over %d at once); %d bios of traced calls' writeback drawn without their call's record\n",
			st.Overlaps, MaxLanes, st.Forgotten)
	}
	return err
}

// writeError says in one line which of the user's files (not the temp
// file written beside it) could not be written, why, and the fix.
func (o *Files) writeError(err error) error {
	var names []string
	var pe *fs.PathError
	var le *os.LinkError
	for i, f := range o.files {
		if errors.As(err, &pe) && pe.Path == f.Name() || errors.As(err, &le) && le.Old == f.Name() {
			names = []string{o.flags[i] + " " + o.finals[i]}
			break
		}
		names = append(names, o.flags[i]+" "+o.finals[i])
	}
	bare := bareErr(err)
	if errors.As(err, &le) {
		bare = le.Err
	}
	fix := "give another path"
	switch {
	case errors.Is(err, syscall.EFBIG):
		fix = "the file reached its size limit (ulimit -f, or the filesystem's largest file): raise the limit, or trace for a shorter time"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		fix = "free space (or raise the quota), or give a path on another filesystem"
	case errors.Is(err, syscall.EIO):
		fix = "the device reported an IO error (see dmesg): give a path on another device"
	}
	return fmt.Errorf("writing %s: %w: not written (a file already there is left as it was): %s", strings.Join(names, " and "), bare, fix)
}

// tempPrefix names the temp files of path base written by process pid:
// the pid lets a later run tell a dead run's file from a live one's.
func tempPrefix(base string, pid int) string {
	return "." + base + ".iopath-" + strconv.Itoa(pid) + "."
}

// removeStale removes the temp files beside path that a run which no
// longer exists left (killed before it could rename or remove them), and
// returns their names.
func removeStale(path string) []string {
	dir, base := filepath.Dir(path), filepath.Base(path)
	matches, _ := filepath.Glob(filepath.Join(dir, "."+base+".iopath-*.tmp"))
	var gone []string
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), "."+base+".iopath-")
		pid, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '.'), 0)])
		if err != nil || pid <= 0 || pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		if os.Remove(m) == nil {
			gone = append(gone, m)
		}
	}
	return gone
}
