package workloads

import (
	"bytes"
	"strconv"

	"golang.org/x/sys/unix"
)

// ProcIO is the kernel's IO accounting of the thread that ran the workload,
// or of its process (Report.KernelScope): the change in
// /proc/thread-self/io or /proc/self/io over the run.
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

// procIOPath is the accounting file that sees a job's IO. An io_uring
// job's IO may run in the process's io threads (io-wq workers iou-wrk-*,
// the SQPOLL thread iou-sqp-*), which its own thread's counters miss:
// /proc/self/io sums every thread of the process (fs/proc/base.c,
// do_io_accounting), io threads included. Thread jobs (--thread) share the
// process, so each keeps its own thread's count.
func procIOPath(s *Spec) string {
	if s.Engine == EngineIOUring && (!s.Thread || s.NumJobs <= 1) {
		return processIO
	}
	return threadIO
}

// openProcIO opens an IO accounting file (procIOPath); for threadIO the
// caller must have locked its goroutine to the thread.
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

// delta returns after-before, removing the one read(2) of the "before"
// snapshot, which returned selfBytes bytes and is counted in after.
func (a ProcIO) delta(before ProcIO, selfBytes int64) ProcIO {
	return ProcIO{
		ReadCalls:  a.ReadCalls - before.ReadCalls - 1,
		WriteCalls: a.WriteCalls - before.WriteCalls,
		ReadChars:  a.ReadChars - before.ReadChars - selfBytes,
		WriteChars: a.WriteChars - before.WriteChars,
		ReadBytes:  a.ReadBytes - before.ReadBytes,
		WriteBytes: a.WriteBytes - before.WriteBytes,
	}
}
