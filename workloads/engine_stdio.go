package workloads

import (
	"bufio"
	"errors"
	"io"
)

// stdioEngine does what glibc's fread/fwrite/fseek do with a 4096-byte
// buffer: reads fill the buffer with 4 KiB read(2) calls at 4 KiB-aligned
// positions and serve small reads from it; writes collect in the buffer and
// reach the kernel as 4 KiB write(2) calls. A seek outside the buffered data
// drops the buffer (after flushing writes) and calls lseek(2).
type stdioEngine struct {
	syncCounter
	s     fdStream
	r     *bufio.Reader
	w     *bufio.Writer
	write bool
	pos   int64 // the stream's position: where the next fread/fwrite goes
}

func newStdioEngine(fd int, write bool) *stdioEngine {
	e := &stdioEngine{syncCounter: syncCounter{fd: fd}, s: fdStream{fd: fd}, write: write}
	if write {
		e.w = bufio.NewWriterSize(&e.s, StdioBufferSize)
	} else {
		e.r = bufio.NewReaderSize(&e.s, StdioBufferSize)
	}
	return e
}

func (e *stdioEngine) op(buf []byte, off int64) (int, error) {
	if e.write {
		return e.writeAt(buf, off)
	}
	return e.readAt(buf, off)
}

func (e *stdioEngine) readAt(buf []byte, off int64) (int, error) {
	if off != e.pos || !e.s.posKnown {
		if d := off - e.pos; e.s.posKnown && d > 0 && d <= int64(e.r.Buffered()) {
			e.r.Discard(int(d)) // a forward fseek inside the buffer: no system call
		} else {
			// Like glibc's fseek: lseek to the 4 KiB block holding off, then
			// skip into it, so the buffer refills with one aligned read(2).
			aligned := off &^ (StdioBufferSize - 1)
			e.r.Reset(&e.s)
			if err := e.s.seek(aligned); err != nil {
				return 0, err
			}
			if _, err := e.r.Discard(int(off - aligned)); err != nil {
				return 0, eofOK(err)
			}
		}
		e.pos = off
	}
	n, err := io.ReadFull(e.r, buf)
	e.pos += int64(n)
	if err == io.ErrUnexpectedEOF {
		err = nil
	}
	return n, eofOK(err)
}

func (e *stdioEngine) writeAt(buf []byte, off int64) (int, error) {
	if off != e.pos || !e.s.posKnown {
		if err := e.w.Flush(); err != nil {
			return 0, err
		}
		if err := e.s.seek(off); err != nil {
			return 0, err
		}
		e.pos = off
	}
	n, err := e.w.Write(buf)
	e.pos += int64(n)
	return n, err
}

// eofOK turns io.EOF into a nil error: the caller sees a short count instead.
func eofOK(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// sync flushes the buffer, then calls fsync(2) or fdatasync(2), like fflush+fsync.
func (e *stdioEngine) sync(data bool) error {
	if err := e.finish(); err != nil {
		return err
	}
	return e.syncCounter.sync(data)
}

func (e *stdioEngine) finish() error {
	if e.write {
		return e.w.Flush()
	}
	return nil
}

func (e *stdioEngine) reset(raw bool) {
	e.s.reset(raw)
	e.pos, e.fsyncs, e.fdatasyncs = 0, 0, 0
	if e.write {
		e.w.Reset(&e.s)
	} else {
		e.r.Reset(&e.s)
	}
}

func (e *stdioEngine) calls() []SyscallCount { return append(e.s.counts(), e.counts()...) }
