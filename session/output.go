package session

import (
	"fmt"
	"io"
	"os"

	"github.com/iopath/iopath/render"
	"github.com/iopath/iopath/timeline"
)

// Output returns where iopath's records, stories and summary go: the -o
// file at path, stdout shared with the traced command (each record then
// starts on a new line, see SharedStdout), or stdout. done closes it; a
// file -o created is removed again when the run failed without output.
// Opening a FIFO waits for its reader; a signal of sig ends that wait
// with Interrupted.
func Output(sig *Signals, path string, stdout io.Writer, withCommand bool) (w io.Writer, shared *SharedStdout, done func(failed error), err error) {
	if path != "" {
		_, statErr := os.Stat(path)
		if err := timeline.CheckOutputPath("-o", path, statErr != nil); err != nil {
			return nil, nil, nil, err
		}
		f, err := openOutput(sig, path)
		if err != nil {
			return nil, nil, nil, err
		}
		return f, nil, func(failed error) {
			fi, _ := f.Stat()
			f.Close()
			if failed != nil && os.IsNotExist(statErr) && fi != nil && fi.Size() == 0 {
				os.Remove(path)
			}
		}, nil
	}
	if f, ok := stdout.(*os.File); ok && withCommand && f == os.Stdout {
		sh, err := ShareStdout(f)
		if err != nil {
			return nil, nil, nil, err
		}
		return sh, sh, func(error) { sh.Close() }, nil
	}
	return stdout, nil, func(error) {}, nil
}

// openOutput opens path for writing. The open runs on its own goroutine:
// on a FIFO without a reader it blocks in the kernel (a blocked open cannot
// be interrupted from Go), and a signal must still end the run then. A
// file opened after the signal is closed again.
func openOutput(sig *Signals, path string) (*os.File, error) {
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

// regularFileChunk is the largest write of several records to a regular
// file of iopath's own (render.Printer.SetChunk): the kernel keeps any
// write to a file in one piece, so only pipes need PIPE_BUF-sized writes.
const regularFileChunk = 64 << 10

// SetChunk lets out write larger batches when w (not shared with a traced
// command) is a regular file.
func SetChunk(out *render.Printer, w io.Writer, shared *SharedStdout) {
	f, ok := w.(*os.File)
	if !ok || shared != nil {
		return
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		out.SetChunk(regularFileChunk)
	}
}
