package workloads

import (
	"bytes"
	"strconv"

	"golang.org/x/sys/unix"
)

// ProcIO is the kernel's IO accounting of a run: the change over the run of
// the system-call counters in /proc/thread-self/io of the thread that ran
// it, and of the storage counters in the file Report.KernelScope names
// (ioAccounting).
type ProcIO struct {
	ReadCalls  int64 `json:"syscr"`       // read-family system calls (read, pread64, readv...)
	WriteCalls int64 `json:"syscw"`       // write-family system calls
	ReadChars  int64 `json:"rchar"`       // bytes those reads returned, from cache or storage
	WriteChars int64 `json:"wchar"`       // bytes those writes accepted
	ReadBytes  int64 `json:"read_bytes"`  // bytes this thread caused to be read from storage
	WriteBytes int64 `json:"write_bytes"` // bytes this thread dirtied or wrote toward storage
}

// procIO reads an IO accounting file: /proc/thread-self/io of the thread
// that opened it, or /proc/self/io of the process.
type procIO struct {
	fd  int
	buf [512]byte
}

// Where a job's kernel IO accounting comes from (Report.KernelScope).
const (
	threadIO  = "/proc/thread-self/io"
	processIO = "/proc/self/io"
)

// procIOPath is the accounting file whose storage counters (read_bytes,
// write_bytes) see a job's IO. An io_uring job's IO may run in the
// process's io threads (io-wq workers iou-wrk-*, the SQPOLL thread
// iou-sqp-*), which its own thread's counters miss: /proc/self/io sums every
// thread of the process (fs/proc/base.c, do_io_accounting), io threads
// included. Thread jobs (--thread) share the process, so each keeps its own
// thread's count.
func procIOPath(s *Spec) string {
	if s.Engine == EngineIOUring && (!s.Thread || s.NumJobs <= 1) {
		return processIO
	}
	return threadIO
}

// ioAccounting snapshots a job's kernel IO accounting. The system-call
// counters (syscr, syscw, rchar, wchar) always come from the job's own
// thread: io_uring's io threads call ->read_iter/->write_iter directly and
// never count there (fs/read_write.c counts in the read/write system calls
// only), while the process's file also counts the Go runtime's other threads
// (netpoll's 8-byte eventfd reads and writes). The storage counters come
// from procIOPath's file.
type ioAccounting struct {
	thread  *procIO
	process *procIO // nil when procIOPath is threadIO
}

// openIOAccounting opens the files for spec s; the caller must have locked
// its goroutine to the thread.
func openIOAccounting(s *Spec) (*ioAccounting, error) {
	t, err := openProcIO(threadIO)
	if err != nil {
		return nil, err
	}
	a := &ioAccounting{thread: t}
	if procIOPath(s) == processIO {
		if a.process, err = openProcIO(processIO); err != nil {
			t.close()
			return nil, err
		}
	}
	return a, nil
}

func (a *ioAccounting) close() {
	a.thread.close()
	if a.process != nil {
		a.process.close()
	}
}

// ioSnapshot is one ioAccounting reading: the thread's counters, the
// process's (when read), and the bytes the reads themselves returned.
type ioSnapshot struct {
	thread, process ProcIO
	withProcess     bool  // process was read
	selfCalls       int64 // read system calls the snapshot made on this thread
	selfChars       int64 // bytes they returned
}

// read takes a snapshot: the thread's file first, then the process's.
func (a *ioAccounting) read() (ioSnapshot, error) {
	var s ioSnapshot
	t, n, err := a.thread.read()
	if err != nil {
		return s, err
	}
	s.thread, s.selfCalls, s.selfChars = t, 1, n
	if a.process != nil {
		p, n, err := a.process.read()
		if err != nil {
			return s, err
		}
		s.process, s.withProcess, s.selfCalls, s.selfChars = p, true, 2, s.selfChars+n
	}
	return s, nil
}

// delta returns the job's accounting between snapshots before and after
// (taken in that order): the thread's system-call counters without the
// reads of the "before" snapshot that followed its thread reading, and the
// storage counters of the process when it was read.
func (after ioSnapshot) delta(before ioSnapshot) ProcIO {
	t := after.thread
	d := ProcIO{
		ReadCalls:  t.ReadCalls - before.thread.ReadCalls - before.selfCalls,
		WriteCalls: t.WriteCalls - before.thread.WriteCalls,
		ReadChars:  t.ReadChars - before.thread.ReadChars - before.selfChars,
		WriteChars: t.WriteChars - before.thread.WriteChars,
		ReadBytes:  t.ReadBytes - before.thread.ReadBytes,
		WriteBytes: t.WriteBytes - before.thread.WriteBytes,
	}
	if after.withProcess {
		d.ReadBytes = after.process.ReadBytes - before.process.ReadBytes
		d.WriteBytes = after.process.WriteBytes - before.process.WriteBytes
	}
	return d
}

// openProcIO opens an IO accounting file; for threadIO the caller must have
// locked its goroutine to the thread.
func openProcIO(path string) (*procIO, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &procIO{fd: fd}, nil
}

func (p *procIO) close() { unix.Close(p.fd) }

// read returns the counters and how many bytes the read itself returned:
// the read is a read system call too, counted after its snapshot was taken.
func (p *procIO) read() (ProcIO, int64, error) {
	n, err := unix.Pread(p.fd, p.buf[:], 0)
	if err != nil {
		return ProcIO{}, 0, err
	}
	var io ProcIO
	for line := range bytes.Lines(p.buf[:n]) {
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte(": "))
		if !ok {
			continue
		}
		x, _ := strconv.ParseInt(string(v), 10, 64)
		switch string(k) {
		case "syscr":
			io.ReadCalls = x
		case "syscw":
			io.WriteCalls = x
		case "rchar":
			io.ReadChars = x
		case "wchar":
			io.WriteChars = x
		case "read_bytes":
			io.ReadBytes = x
		case "write_bytes":
			io.WriteBytes = x
		}
	}
	return io, int64(n), nil
}
