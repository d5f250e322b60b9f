package workloads

import "golang.org/x/sys/unix"

// mmapEngine copies between the buffer and a shared mapping of the file, so
// the kernel sees page faults instead of read/write calls. sync is
// msync(MS_SYNC) of the whole mapping.
type mmapEngine struct {
	m      []byte
	write  bool
	msyncs int64
}

func (e *mmapEngine) op(buf []byte, off int64) (int, error) {
	if e.write {
		return copy(e.m[off:off+int64(len(buf))], buf), nil
	}
	return copy(buf, e.m[off:off+int64(len(buf))]), nil
}

func (e *mmapEngine) sync(bool) error {
	e.msyncs++
	return retry(func() error { return unix.Msync(e.m, unix.MS_SYNC) })
}

func (e *mmapEngine) finish() error { return nil }

func (e *mmapEngine) reset(bool) { e.msyncs = 0 }

func (e *mmapEngine) calls() []SyscallCount {
	if e.msyncs == 0 {
		return nil
	}
	return []SyscallCount{{Name: "msync", Calls: e.msyncs}}
}
