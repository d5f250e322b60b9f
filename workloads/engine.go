package workloads

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// SyscallCount is how many calls of one system call an engine issued during
// a run, and the bytes they moved.
type SyscallCount struct {
	Name  string `json:"name"`  // system call, e.g. "pread64"
	Calls int64  `json:"calls"` // number of calls
	Bytes int64  `json:"bytes"` // bytes read or written by them (0 for calls that move none)
	// BytesPerCall is Bytes/Calls, filled in by Run.
	BytesPerCall float64 `json:"bytes_per_call"`
}

// engine issues a workload's ops. Implementations count every system call
// they make so the report can show them.
type engine interface {
	// op reads into or writes buf at file offset off, returning the bytes done.
	op(buf []byte, off int64) (int, error)
	// sync makes written data durable: fdatasync(2) if data, else fsync(2).
	sync(data bool) error
	// finish flushes user-space buffers at the end of a run.
	finish() error
	// reset zeroes the counters and drops buffered state before a run;
	// raw selects raw system calls for the ops (see sysIO).
	reset(raw bool)
	// calls lists the system calls made since reset.
	calls() []SyscallCount
}

// syncCounter counts fsync and fdatasync calls on fd.
type syncCounter struct {
	fd                 int
	fsyncs, fdatasyncs int64
}

func (c *syncCounter) sync(data bool) error {
	if data {
		c.fdatasyncs++
		return retry(func() error { return unix.Fdatasync(c.fd) })
	}
	c.fsyncs++
	return retry(func() error { return unix.Fsync(c.fd) })
}

func (c *syncCounter) counts() []SyscallCount {
	var out []SyscallCount
	if c.fsyncs > 0 {
		out = append(out, SyscallCount{Name: "fsync", Calls: c.fsyncs})
	}
	if c.fdatasyncs > 0 {
		out = append(out, SyscallCount{Name: "fdatasync", Calls: c.fdatasyncs})
	}
	return out
}

// retry repeats f while it fails with EINTR.
func retry(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// psyncEngine issues one pread(2) or pwrite(2) per op.
type psyncEngine struct {
	syncCounter
	write bool
	raw   bool
	n     int64 // calls
	bytes int64
}

func (e *psyncEngine) op(buf []byte, off int64) (int, error) {
	if e.write {
		return e.pwrite(buf, off)
	}
	for {
		n, err := sysIO(e.raw, unix.SYS_PREAD64, e.fd, buf, off)
		e.n++
		if n > 0 {
			e.bytes += int64(n)
		}
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// pwrite writes all of buf at off: after a short write it writes the rest,
// which either completes or returns the reason (such as ENOSPC).
func (e *psyncEngine) pwrite(buf []byte, off int64) (int, error) {
	done := 0
	for {
		n, err := sysIO(e.raw, unix.SYS_PWRITE64, e.fd, buf[done:], off+int64(done))
		e.n++
		if n > 0 {
			e.bytes += int64(n)
			done += n
		}
		if errors.Is(err, unix.EINTR) || err == nil && n > 0 && done < len(buf) {
			continue
		}
		return done, err
	}
}

func (e *psyncEngine) finish() error { return nil }

func (e *psyncEngine) reset(raw bool) {
	e.n, e.bytes, e.fsyncs, e.fdatasyncs, e.raw = 0, 0, 0, 0, raw
}

func (e *psyncEngine) calls() []SyscallCount {
	name := "pread64"
	if e.write {
		name = "pwrite64"
	}
	return append([]SyscallCount{{Name: name, Calls: e.n, Bytes: e.bytes}}, e.counts()...)
}

// fdStream is a file descriptor used through its file position, counting
// read(2), write(2) and lseek(2) calls. It is an io.Reader and io.Writer.
type fdStream struct {
	fd               int
	pos              int64 // the kernel's file position
	reads, readBytes int64
	writes, wrBytes  int64
	seeks            int64
	posKnown         bool
	raw              bool // raw system calls (see sysIO)
}

func (s *fdStream) Read(p []byte) (int, error) {
	for {
		n, err := sysIO(s.raw, unix.SYS_READ, s.fd, p, 0)
		s.reads++
		if n > 0 {
			s.readBytes += int64(n)
			s.pos += int64(n)
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n == 0 && err == nil && len(p) > 0 {
			return 0, io.EOF
		}
		return max(n, 0), err
	}
}

func (s *fdStream) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := sysIO(s.raw, unix.SYS_WRITE, s.fd, p[done:], 0)
		s.writes++
		if n > 0 {
			s.wrBytes += int64(n)
			s.pos += int64(n)
			done += n
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// seek moves the file position to off, calling lseek(2) only if it is elsewhere.
func (s *fdStream) seek(off int64) error {
	if s.posKnown && s.pos == off {
		return nil
	}
	s.seeks++
	if err := sysSeek(s.raw, s.fd, off); err != nil {
		s.posKnown = false
		return err
	}
	s.pos, s.posKnown = off, true
	return nil
}

func (s *fdStream) reset(raw bool) {
	*s = fdStream{fd: s.fd, raw: raw}
}

func (s *fdStream) counts() []SyscallCount {
	var out []SyscallCount
	if s.seeks > 0 {
		out = append(out, SyscallCount{Name: "lseek", Calls: s.seeks})
	}
	if s.reads > 0 {
		out = append(out, SyscallCount{Name: "read", Calls: s.reads, Bytes: s.readBytes})
	}
	if s.writes > 0 {
		out = append(out, SyscallCount{Name: "write", Calls: s.writes, Bytes: s.wrBytes})
	}
	return out
}

// syncEngine issues lseek(2) when the file position is not at the op's
// offset (like fio's sync engine), then one read(2) or write(2).
type syncEngine struct {
	syncCounter
	s     fdStream
	write bool
}

func (e *syncEngine) op(buf []byte, off int64) (int, error) {
	if err := e.s.seek(off); err != nil {
		return 0, err
	}
	if e.write {
		return e.s.Write(buf)
	}
	n, err := e.s.Read(buf)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (e *syncEngine) finish() error { return nil }

func (e *syncEngine) reset(raw bool) { e.s.reset(raw); e.fsyncs, e.fdatasyncs = 0, 0 }

func (e *syncEngine) calls() []SyscallCount { return append(e.s.counts(), e.counts()...) }
