package session

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// -o: a file the run created is removed when the run failed before
// writing; one that existed stays; stdout is passed through.
func TestOutput(t *testing.T) {
	dir := t.TempDir()
	created := filepath.Join(dir, "new")
	w, shared, done, err := Output(nil, created, nil, io.Discard, true)
	if err != nil || shared != nil {
		t.Fatalf("Output(%s): %v, shared %v", created, err, shared)
	}
	if w.file == nil {
		t.Errorf("-o gave %T, want the file", w.w)
	}
	done(errors.New("failed"))
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("an empty -o file of a failed run stays: %v", err)
	}
	existing := filepath.Join(dir, "old")
	if err := os.WriteFile(existing, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, done, err = Output(nil, existing, nil, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	done(errors.New("failed"))
	if _, err := os.Stat(existing); err != nil {
		t.Errorf("an -o file that existed was removed: %v", err)
	}
	var buf bytes.Buffer
	w, shared, _, err = Output(nil, "", &buf, io.Discard, true)
	if err != nil || w.w != &buf || shared != nil {
		t.Errorf("Output without -o: %v, %v, %v; want the writer given", w, shared, err)
	}
	if _, _, _, err := Output(nil, filepath.Join(dir, "no", "such"), nil, io.Discard, false); err == nil {
		t.Error("-o in a missing directory was accepted")
	}
}

// -o naming iopath's stdout (`-o f -- cmd > f`) is refused before the
// file is truncated; /dev/null as both is fine.
func TestOutputIsStdout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "same.txt")
	if err := os.WriteFile(path, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	_, _, _, err = Output(nil, path, stdout, io.Discard, true)
	if err == nil || !strings.Contains(err.Error(), "also iopath's standard output") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("-o FILE > FILE: %v, want one line refusing it", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "kept\n" {
		t.Errorf("the refused -o truncated its file: %q", b)
	}
	// -o f … 2> f: notes is stderr
	_, _, _, err = Output(nil, path, io.Discard, stdout, true)
	if err == nil || !strings.Contains(err.Error(), "also iopath's standard error") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("-o FILE 2> FILE: %v, want one line refusing it", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "kept\n" {
		t.Errorf("the refused -o truncated its file: %q", b)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	_, _, done, err := Output(nil, os.DevNull, devnull, io.Discard, true)
	if err != nil {
		t.Fatalf("-o /dev/null > /dev/null refused: %v", err)
	}
	done(nil)
}

// -o of a file that would fail at the first write, known before anything
// loads, is refused (it used to fail at the summary, at the very end of a
// run doing no IO): a regular file of proc or sysfs, the full device.
// Other outputs, a pipe named through /proc/self/fd included, are taken.
func TestCheckOutputTarget(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/proc/version", "-o /proc/version is a file of the kernel's proc filesystem, which takes no records (the first write would fail): give -o a file on a disk or a tmpfs"},
		{"/proc/self/status", "-o /proc/self/status is a file of the kernel's proc filesystem"},
		{"/sys/kernel/uevent_seqnum", "-o /sys/kernel/uevent_seqnum is a file of the kernel's sysfs filesystem"},
		{"/dev/full", "-o /dev/full is the full device (1:7), which fails every write with \"no space left on device\": give -o a file on a disk, or /dev/null to keep no records"},
	} {
		if _, err := os.Stat(c.path); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if err := CheckOutputTarget(c.path); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("CheckOutputTarget(%s) = %v, want one line %q", c.path, err, c.want)
		}
		if _, _, _, err := Output(nil, c.path, nil, io.Discard, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Output(%s) = %v, want %q", c.path, err, c.want)
		}
	}
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer pw.Close()
	regular := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(regular, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{os.DevNull, regular, filepath.Join(filepath.Dir(regular), "new"), fmt.Sprintf("/proc/self/fd/%d", pw.Fd()), ""} {
		if err := CheckOutputTarget(p); err != nil {
			t.Errorf("CheckOutputTarget(%q) = %v, want nil", p, err)
		}
	}
}

// The first failed write is kept (later ones are not tried), closes
// Failed, and is the run's error: one line naming the output; EPIPE is
// quiet with 141.
func TestOutWriteError(t *testing.T) {
	// /dev/full, which -o refuses (CheckOutputTarget): the write error
	// of an output that took the open.
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewOut(f, "-o /dev/full")
	done := func(failed error) error { return orOutErr(failed, w) }
	select {
	case <-w.Failed():
		t.Fatal("Failed closed before any write")
	default:
	}
	if _, err := w.Write([]byte("record\n")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write to /dev/full: %v, want ENOSPC", err)
	}
	<-w.Failed()
	err = done(nil)
	var oe OutputError
	if !errors.As(err, &oe) || oe.Broken() || oe.ExitCode() != 1 {
		t.Fatalf("done after a failed write: %v, want an OutputError with exit status 1", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "writing -o /dev/full: no space left on device:") || strings.Contains(msg, "\n") {
		t.Errorf("message %q does not name the file and the error in one line", msg)
	}
	// Freeing space cannot fix the full device (`iopath trace … >
	// /dev/full` was told to): the advice names it.
	if msg := err.Error(); !strings.Contains(msg, "it is the full device (/dev/full, 1:7), which fails every write") || strings.Contains(msg, "free space") {
		t.Errorf("message %q: want the full device named, not free space advised", msg)
	}
	if err := done(errors.New("run failed")); err.Error() != "run failed" {
		t.Errorf("a run's own error was replaced: %v", err)
	}

	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer pw.Close()
	out := NewOut(pw, "stdout")
	out.Write([]byte("a\n"))
	if _, err := out.Write([]byte("b\n")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("second write: %v, want the first error again", err)
	}
	if !errors.As(out.Err(), &oe) || !oe.Broken() || oe.ExitCode() != 141 {
		t.Errorf("EPIPE: %v, want a broken OutputError with exit status 141", out.Err())
	}
	// Breaker: an -o FIFO whose reader left ended with 141 and no line at
	// all, although the command was sent SIGTERM: now one line says it.
	fifo := NewOut(pw, "-o run/f.fifo")
	fifo.Write([]byte("a\n"))
	if !errors.As(fifo.Err(), &oe) || oe.Broken() || oe.ExitCode() != 141 {
		t.Errorf("-o FIFO EPIPE: %v, want a said OutputError with exit status 141", fifo.Err())
	}
	if msg := fifo.Err().Error(); !strings.HasPrefix(msg, "writing -o run/f.fifo: the reader of FIFO run/f.fifo closed it: iopath stopped there") || strings.Contains(msg, "\n") {
		t.Errorf("-o FIFO EPIPE says %q", msg)
	}
}

// issue 10: -o /proc/self/status (EINVAL) was told to "free space". The
// advice follows the errno: free space only for ENOSPC and EDQUOT.
func TestOutputErrorAdvice(t *testing.T) {
	for _, c := range []struct {
		e    OutputError
		want string
	}{
		{OutputError{Name: "-o /x", Err: syscall.ENOSPC}, "free space (or raise the quota), or give -o another file on another filesystem"},
		{OutputError{Name: "stdout", Err: syscall.EDQUOT}, "free space (or raise the quota), or redirect stdout elsewhere on another filesystem"},
		{OutputError{Name: "-o /x", Err: syscall.EINVAL}, "it takes no writes like these (a special file): give -o another file (a regular file, a pipe or a terminal)"},
		{OutputError{Name: "-o /proc/version", Err: syscall.EIO, KernelFS: "proc"}, "it is a file of the kernel's proc filesystem, which takes no records: give -o another file (a regular file, a pipe or a terminal)"},
		{OutputError{Name: "-o /x", Err: syscall.EIO}, "the device reported an IO error (see dmesg): give -o another file on another device"},
		{OutputError{Name: "-o /x", Err: syscall.EFBIG}, "the file reached its size limit (ulimit -f, or the filesystem's largest file): raise the limit or give -o another file"},
		{OutputError{Name: "stdout", Err: syscall.EBADF}, "it cannot be written: redirect stdout elsewhere"},
	} {
		msg := c.e.Error()
		if !strings.HasSuffix(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%s, %v: %q, want it to end with %q", c.e.Name, c.e.Err, msg, c.want)
		}
		if isFree := errors.Is(c.e.Err, syscall.ENOSPC) || errors.Is(c.e.Err, syscall.EDQUOT); isFree != strings.Contains(msg, "free space") {
			t.Errorf("%v: %q", c.e.Err, msg)
		}
	}
	// The kernel filesystem is found from the file written (as root,
	// /proc/self/status opens for writing and its writes fail, EINVAL).
	f, err := os.OpenFile("/proc/self/status", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("cannot open /proc/self/status for writing: %v", err)
	}
	defer f.Close()
	out := NewOut(f, "-o /proc/self/status")
	if _, err := out.Write([]byte("{}\n")); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("write to /proc/self/status: %v, want EINVAL", err)
	}
	if msg := out.Err().Error(); msg != "writing -o /proc/self/status: invalid argument: iopath stopped there, what came after is lost: it is a file of the kernel's proc filesystem, which takes no records: give -o another file (a regular file, a pipe or a terminal)" {
		t.Errorf("message %q", msg)
	}
}

// issue 10: -o FIFO with no reader waited silently. It is said once on
// notes, before the open waits; with a reader already there, nothing is.
func TestOutputFIFONote(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	nr, nw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	type result struct {
		done func(error) error
		err  error
	}
	res := make(chan result, 1)
	go func() {
		_, _, done, err := Output(nil, fifo, nil, nw, false)
		nw.Close()
		res <- result{done, err}
	}()
	line, err := bufio.NewReader(nr).ReadString('\n')
	if want := "iopath: -o " + fifo + " is a FIFO that no process reads yet: waiting for a reader to open it (SIGINT or SIGTERM stops iopath)\n"; err != nil || line != want {
		t.Fatalf("note %q (%v), want %q", line, err, want)
	}
	reader, err := os.Open(fifo) // the reader comes: the open returns
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.done(nil)
	if rest, _ := io.ReadAll(nr); len(rest) != 0 {
		t.Errorf("more notes: %q", rest)
	}
	// A reader already there: no note.
	reader2, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader2.Close()
	var notes bytes.Buffer
	_, _, done, err := Output(nil, fifo, nil, &notes, false)
	if err != nil {
		t.Fatal(err)
	}
	done(nil)
	if notes.Len() != 0 {
		t.Errorf("with a reader: notes %q", notes.String())
	}
}
