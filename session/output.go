package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/timeline"
	"github.com/iopath/iopath/tracer/kernel"
	"golang.org/x/sys/unix"
)

// Out is iopath's output (records, stories, summary; top's JSON objects):
// it keeps the first write error, drops every later write, and closes
// Failed then, so that the run stops (tracerun.Run, topview.Run) instead
// of tracing on into an output that loses everything.
type Out struct {
	w      io.Writer
	name   string   // how the error names it: "-o FILE" or "stdout"
	file   *os.File // the file written, nil if w is no file of iopath's own
	once   sync.Once
	mu     sync.Mutex
	err    error
	failed chan struct{}
}

// NewOut wraps w, named name in the error ("-o FILE", "stdout").
func NewOut(w io.Writer, name string) *Out {
	o := &Out{w: w, name: name, failed: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		o.file = f
	}
	return o
}

// Write writes p, or returns the first write error again without writing.
func (o *Out) Write(p []byte) (int, error) {
	o.mu.Lock()
	err := o.err
	o.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.fail(err)
	}
	return n, err
}

func (o *Out) fail(err error) {
	o.mu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.mu.Unlock()
	o.once.Do(func() { close(o.failed) })
}

// Failed is closed at the first failed write.
func (o *Out) Failed() <-chan struct{} { return o.failed }

// Err is the first write (or close) error as an OutputError, nil if none.
func (o *Out) Err() error {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		return nil
	}
	oe := OutputError{Name: o.name, Err: o.err}
	f := o.file
	if f == nil && o.name == "stdout" {
		f = os.Stdout // shared with the command: written through a relay
	}
	if f != nil {
		oe.KernelFS = kernel.PseudoFS(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
		var st unix.Stat_t
		oe.FullDevice = unix.Fstat(int(f.Fd()), &st) == nil && isFullDevice(&st)
	}
	return oe
}

// isFullDevice says whether st is the full device (/dev/full, character
// device 1:7), which fails every write with ENOSPC.
func isFullDevice(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(st.Rdev) == 1 && unix.Minor(st.Rdev) == 7
}

// OutputError is a failed write to iopath's output. The trace stops at
// the first one (a traced command gets SIGTERM, as at --duration) and
// iopath exits with status 1, saying it in one line; or, for EPIPE (the
// reader is gone), with status 141 (128+SIGPIPE, what a shell reports for
// a tool that SIGPIPE ended): silently for stdout (`iopath trace … | head`),
// in one line for an -o FIFO.
type OutputError struct {
	Name     string // "-o FILE" or "stdout"
	Err      error
	KernelFS string // the output is a file of this kernel filesystem (proc, sysfs), if any
	// FullDevice: the output is /dev/full (1:7), where freeing space
	// cannot help (stdout; -o is refused at the start: CheckOutputTarget).
	FullDevice bool
}

func (e OutputError) Error() string {
	if e.pipeClosed() && e.Name != "stdout" {
		path := strings.TrimPrefix(e.Name, "-o ")
		return fmt.Sprintf("writing %s: the reader of FIFO %s closed it: iopath stopped there (a traced command got SIGTERM), what came after is lost: keep the reader open until iopath ends, or give -o a regular file", e.Name, path)
	}
	return fmt.Sprintf("writing %s: %v: iopath stopped there, what came after is lost: %s", e.Name, bareErr(e.Err), e.advice())
}

// advice is the fix for the failed write: free space only when space ran
// out (-o /proc/self/status fails with EINVAL and was told to free space).
func (e OutputError) advice() string {
	other := "give -o another file"
	if e.Name == "stdout" {
		other = "redirect stdout elsewhere"
	}
	switch {
	case e.KernelFS != "":
		return fmt.Sprintf("it is a file of the kernel's %s filesystem, which takes no records: %s (a regular file, a pipe or a terminal)", e.KernelFS, other)
	case e.FullDevice:
		return "it is the full device (/dev/full, 1:7), which fails every write: " + other
	case errors.Is(e.Err, syscall.ENOSPC), errors.Is(e.Err, syscall.EDQUOT):
		return "free space (or raise the quota), or " + other + " on another filesystem"
	case errors.Is(e.Err, syscall.EFBIG):
		return "the file reached its size limit (ulimit -f, or the filesystem's largest file): raise the limit or " + other
	case errors.Is(e.Err, syscall.EIO):
		return "the device reported an IO error (see dmesg): " + other + " on another device"
	case errors.Is(e.Err, syscall.EINVAL):
		return "it takes no writes like these (a special file): " + other + " (a regular file, a pipe or a terminal)"
	case errors.Is(e.Err, syscall.EAGAIN):
		return "it is non-blocking and was full: " + other + " (a regular file, or a reader that keeps up)"
	}
	return "it cannot be written: " + other
}

func (e OutputError) Unwrap() error { return e.Err }

// Broken says stdout's reader went away (EPIPE, `| head`): exit quietly.
// An -o FIFO whose reader left is said in one line (Error).
func (e OutputError) Broken() bool { return e.pipeClosed() && e.Name == "stdout" }

// pipeClosed says the reader went away (EPIPE).
func (e OutputError) pipeClosed() bool { return errors.Is(e.Err, syscall.EPIPE) }

// ExitCode is 141 for EPIPE (stdout or -o), else 1.
func (e OutputError) ExitCode() int {
	if e.pipeClosed() {
		return 128 + int(syscall.SIGPIPE)
	}
	return 1
}

// bareErr drops the *os.PathError's "write /path" (the name is said already).
func bareErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Output returns where iopath's records, stories and summary go: the -o
// file at path, stdout shared with the traced command (each record then
// starts on a new line, see SharedStdout), or stdout. done closes it and
// returns failed, or the output's error (a failed write or close) when
// failed is nil; a file -o created is removed again when the run failed
// without output. -o naming iopath's stdout or stderr itself (`-o f … > f`,
// `-o f … 2> f`; notes is stderr) is refused: the truncating open and both
// writers would destroy the command's output. Opening a FIFO waits for its reader, said on notes;
// a signal of sig ends that wait with Interrupted.
func Output(sig *Signals, path string, stdout, notes io.Writer, withCommand bool) (w *Out, shared *SharedStdout, done func(failed error) error, err error) {
	if path != "" {
		_, statErr := os.Stat(path)
		if err := timeline.CheckOutputPath("-o", path, statErr != nil); err != nil {
			return nil, nil, nil, err
		}
		if err := CheckOutputTarget(path); err != nil {
			return nil, nil, nil, err
		}
		if err := timeline.CheckNotStd("-o", path, stdout, notes); err != nil {
			return nil, nil, nil, err
		}
		f, err := openOutput(sig, path, notes)
		if err != nil {
			return nil, nil, nil, err
		}
		out := NewOut(f, "-o "+path)
		return out, nil, func(failed error) error {
			fi, _ := f.Stat()
			if cerr := f.Close(); cerr != nil {
				out.fail(cerr)
			}
			if failed != nil && os.IsNotExist(statErr) && fi != nil && fi.Size() == 0 {
				os.Remove(path)
			}
			return orOutErr(failed, out)
		}, nil
	}
	if f, ok := stdout.(*os.File); ok && withCommand && f == os.Stdout {
		sh, err := ShareStdout(f)
		if err != nil {
			return nil, nil, nil, err
		}
		out := NewOut(sh, "stdout")
		out.file = nil // shared: PIPE_BUF-sized writes
		return out, sh, func(failed error) error {
			var ie Interrupted
			if errors.As(failed, &ie) || out.Err() != nil {
				sh.Close()
			} else {
				var stop <-chan struct{}
				if sig != nil {
					stop = sig.Fired()
				}
				sh.Finish(stop, notes)
			}
			return orOutErr(failed, out)
		}, nil
	}
	out := NewOut(stdout, "stdout")
	return out, nil, func(failed error) error { return orOutErr(failed, out) }, nil
}

// CheckOutputTarget refuses an existing -o that fails at its first write,
// said before anything loads: for a run that does no IO of its own that
// write is the summary at the very end (-o /dev/full -- sleep 10 ran 11 s,
// then failed). Those known at the start are a regular file of a kernel
// filesystem (/proc/version, /proc/self/status, a sysfs file: the kernel
// refuses records there, or takes them as input) and the full device
// (/dev/full, character device 1:7: every write fails with ENOSPC). Any
// other failure is the write's to report (Out).
func CheckOutputTarget(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil // a new file: timeline.CheckOutputPath checks its directory
	}
	if kfs := kernel.PseudoFS(path); kfs != "" && st.Mode().IsRegular() {
		return fmt.Errorf("-o %s is a file of the kernel's %s filesystem, which takes no records (the first write would fail): give -o a file on a disk or a tmpfs", path, kfs)
	}
	var ust unix.Stat_t
	if unix.Stat(path, &ust) == nil && isFullDevice(&ust) {
		return fmt.Errorf("-o %s is the full device (1:7), which fails every write with \"no space left on device\": give -o a file on a disk, or /dev/null to keep no records", path)
	}
	return nil
}

// orOutErr is failed, else out's error: a run that failed says why, one
// whose output failed says that.
func orOutErr(failed error, out *Out) error {
	if failed != nil {
		return failed
	}
	return out.Err()
}

// openOutput opens path for writing. The open runs on its own goroutine:
// on a FIFO without a reader it blocks in the kernel (a blocked open cannot
// be interrupted from Go), and a signal must still end the run then. A
// file opened after the signal is closed again. A FIFO that no process
// reads yet is said on notes first (iopath used to wait silently).
func openOutput(sig *Signals, path string, notes io.Writer) (*os.File, error) {
	if noFIFOReader(path) {
		fmt.Fprintf(notes, "iopath: -o %s is a FIFO that no process reads yet: waiting for a reader to open it (SIGINT or SIGTERM stops iopath)\n", path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	res := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		res <- opened{f, err}
	}()
	var fired <-chan struct{}
	if sig != nil {
		fired = sig.Fired()
	}
	select {
	case r := <-res:
		if r.err != nil {
			return nil, fmt.Errorf("-o %s: %w: give a writable path", path, r.err)
		}
		return r.f, nil
	case <-fired:
		go func() {
			if r := <-res; r.f != nil {
				r.f.Close()
			}
		}()
		return nil, Interrupted{Signal: sig.Signal(), Early: true}
	}
}

// noFIFOReader reports whether path is a FIFO without a reader: its
// non-blocking open for writing fails with ENXIO (fifo(7)).
func noFIFOReader(path string) bool {
	if st, err := os.Stat(path); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return false
	}
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err == nil {
		syscall.Close(fd)
	}
	return errors.Is(err, syscall.ENXIO)
}

// regularFileChunk is the largest write of several records to a regular
// file of iopath's own (render.Printer.SetChunk): the kernel keeps any
// write to a file in one piece, so only pipes need PIPE_BUF-sized writes.
const regularFileChunk = 64 << 10

// SetChunk lets out write larger batches when w (not shared with a traced
// command) is a regular file.
func SetChunk(out *render.Printer, w *Out, shared *SharedStdout) {
	if w == nil || w.file == nil || shared != nil {
		return
	}
	if st, err := w.file.Stat(); err == nil && st.Mode().IsRegular() {
		out.SetChunk(regularFileChunk)
	}
}
