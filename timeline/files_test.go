package timeline

import (
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/record"
	"golang.org/x/sys/unix"
)

// A run killed before it renamed its temp files (SIGKILL) leaves
// .NAME.iopath-PID.*.tmp beside the output: the next run removes those
// of dead pids, and keeps a live run's and other files.
func TestOpenFilesRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.json")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, tempPrefix("x.json", dead.Process.Pid)+"123.tmp")
	live := filepath.Join(dir, tempPrefix("x.json", 1)+"456.tmp") // pid 1 runs
	other := filepath.Join(dir, ".x.json.789.tmp")                // not ours
	for _, p := range []string{stale, live, other} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o, err := OpenFiles(out, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	o.Abort()
	if len(o.Stale) != 1 || o.Stale[0] != stale {
		t.Errorf("removed %v, want only %s", o.Stale, stale)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead run's temp file is still there: %v", err)
	}
	for _, p := range []string{live, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 2 { // live and other; Abort removed this run's temp file
		t.Errorf("files left: %v, want only %s and %s", left, live, other)
	}
}

// A bad --timeline/--report path is refused with its real cause: /proc
// once said "directory /proc does not exist", and `nofile/` (no such
// directory) "is a directory".
func TestOpenFilesBadPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ trace, report, want string }{
		{"", "/proc/x.html", "--report /proc/x.html: /proc is on proc, a kernel filesystem that holds no files of ours: choose a directory on a disk or a tmpfs"},
		{"/sys/x.json", "", "--timeline /sys/x.json: /sys is on sysfs, a kernel filesystem"},
		{filepath.Join(dir, "nofile") + "/", "", "--timeline " + dir + "/nofile/ ends in \"/\", which names a directory (and there is none): give a file name (e.g. " + dir + "/nofile/trace.json)"},
		{dir + "/", "", "--timeline " + dir + "/ is a directory: give a file name (e.g. " + dir + "/trace.json)"},
		{"", dir, "--report " + dir + " is a directory: give a file name (e.g. " + dir + "/report.html)"},
		{filepath.Join(dir, "no", "x.json"), "", "directory " + dir + "/no does not exist: create it or choose another path"},
		{filepath.Join(file, "x.json"), "", file + " is not a directory: choose another path"},
	} {
		o, err := OpenFiles(c.trace, c.report, "test")
		if err == nil {
			o.Abort()
			t.Errorf("--timeline %q --report %q: accepted", c.trace, c.report)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("--timeline %q --report %q:\n got %s\nwant %s", c.trace, c.report, err, c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// --timeline and --report write through a symbolic link into the file it
// names (the link stays a link) and refuse device nodes, FIFOs and links
// to them: the temp file renamed over a node once replaced it (as root,
// `--timeline /dev/null` replaced /dev/null).
func TestOpenFilesLinksAndNodes(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink("real.json", link); err != nil {
		t.Fatal(err)
	}
	o, err := OpenFiles(link, "", "test")
	if err != nil {
		t.Fatalf("--timeline to a link: %v", err)
	}
	o.Tee(func(any) {})(&record.Syscall{Type: "syscall", OpID: 1, TimeNs: 1000, Pid: 10, Tid: 10, Comm: "r", Syscall: "read", DurationNs: 500})
	o.Summary(&record.Summary{})
	var said strings.Builder
	if err := o.End(nil, &said); err != nil {
		t.Fatal(err)
	}
	// Counts in words, singular for one (it said "1 calls").
	if want := "iopath: wrote " + real + ": 1 call, 0 faults, 0 bios, 0 writeback slices, 0 dirty-page spans, 0 arrows\n"; said.String() != want {
		t.Errorf("End said %q, want %q", said.String(), want)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi.Mode(), err)
	}
	if b, err := os.ReadFile(real); err != nil || !strings.HasPrefix(string(b), "{") {
		t.Errorf("the link's file was not written: %q, %v", b, err)
	}
	// a link to a file not there yet (in a directory that is): created
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	ahead := filepath.Join(dir, "ahead.html")
	if err := os.Symlink("sub/report.html", ahead); err != nil {
		t.Fatal(err)
	}
	if o, err = OpenFiles("", ahead, "test"); err != nil {
		t.Fatalf("--report to a link to a new file: %v", err)
	}
	o.Summary(&record.Summary{})
	if err := o.End(nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(ahead); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "sub", "report.html")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link's new file: %v", err)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]os.FileMode{fifo: os.ModeNamedPipe}
	null := filepath.Join(dir, "null")
	if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err == nil {
		nodes[null] = os.ModeDevice | os.ModeCharDevice
	} else {
		t.Logf("no device node (mknod: %v): FIFOs only", err)
	}
	for node := range maps.Clone(nodes) {
		l := node + ".link"
		if err := os.Symlink(filepath.Base(node), l); err != nil {
			t.Fatal(err)
		}
		nodes[l] = os.ModeSymlink
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	nodes[loop] = os.ModeSymlink
	for p, mode := range nodes {
		for _, flags := range [][2]string{{p, ""}, {"", p}} {
			o, err := OpenFiles(flags[0], flags[1], "test")
			if err == nil {
				o.Summary(&record.Summary{})
				o.End(nil, io.Discard)
				t.Errorf("--timeline %q --report %q: accepted", flags[0], flags[1])
			} else if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: %q, want one line naming it", p, err)
			}
			if fi, err := os.Lstat(p); err != nil || fi.Mode().Type() != mode {
				t.Errorf("%s changed: mode %v (want %v), %v", p, fi.Mode().Type(), mode, err)
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Breaker: a failed write of the timeline (`ulimit -f`) named the internal
// temp file ("write run/.t.json.iopath-4433.…tmp: file too large") and gave
// no fix. It names the user's path now, and the fix for the errno.
func TestFilesWriteErrorNamesPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.json")
	o, err := OpenFiles(path, "", "title")
	if err != nil {
		t.Fatal(err)
	}
	o.Summary(&record.Summary{})
	o.files[0].Close() // every write to it fails now
	err = o.End(nil, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "writing --timeline "+path+": ") || strings.Contains(err.Error(), ".iopath-") || strings.Contains(err.Error(), "\n") {
		t.Errorf("End after a failed write: %v, want one line naming --timeline %s", err, path)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
	temp := filepath.Join(dir, ".t.json.iopath-1.2.tmp")
	o = &Files{files: []*os.File{os.NewFile(0, temp)}, finals: []string{path}, flags: []string{"--timeline"}}
	msg := o.writeError(&os.PathError{Op: "write", Path: temp, Err: unix.EFBIG}).Error()
	if !strings.HasPrefix(msg, "writing --timeline "+path+": file too large: ") || !strings.Contains(msg, "raise the limit") {
		t.Errorf("EFBIG says %q", msg)
	}
}

// A --timeline through a /proc/PID/fd link to a pipe (/dev/stdout when
// stdout is a pipe) is named as a FIFO; it was a made-up path on proc
// ("--timeline /proc/self/fd/pipe:[1158518]: /proc/self/fd is on proc").
func TestOpenFilesPipeLink(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	path := fmt.Sprintf("/proc/self/fd/%d", w.Fd())
	_, err = OpenFiles(path, "", "test")
	if err == nil || !strings.Contains(err.Error(), "--timeline "+path+" is a FIFO (pipe:[") {
		t.Fatalf("--timeline %s: %v, want it named a FIFO", path, err)
	}
}
