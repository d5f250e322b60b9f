package record

// Class is what a traced call does with a file's data: the one
// classification of syscall names that the engine's totals and the stories
// share.
type Class uint8

// Classes of calls.
const (
	ClassOther  Class = iota // a name iopath does not trace (sys_N)
	ClassRead                // read family, vfs_read, and in-kernel copies (read side of their source)
	ClassWrite               // write family and vfs_write
	ClassSync                // fsync, fdatasync, sync_file_range, sync, syncfs, msync
	ClassAdvice              // madvise, fadvise64, readahead: hints about later access (WILLNEED and readahead read ahead)
)

// ClassOf classifies a syscall record's "syscall" name.
func ClassOf(syscall string) Class {
	switch syscall {
	case "read", "pread64", "readv", "preadv", "preadv2", "vfs_read", "sendfile", "splice", "copy_file_range", "libaio_read", "io_uring_read":
		return ClassRead
	case "write", "pwrite64", "writev", "pwritev", "pwritev2", "vfs_write", "libaio_write", "io_uring_write":
		return ClassWrite
	case "fsync", "fdatasync", "sync_file_range", "sync", "syncfs", "msync":
		return ClassSync
	case "madvise", "fadvise64", "readahead":
		return ClassAdvice
	}
	return ClassOther
}

// IsRead reports whether the call reads a file's data (copies included).
func IsRead(syscall string) bool { return ClassOf(syscall) == ClassRead }

// IsWrite reports whether the call is a write (not an in-kernel copy,
// although a copy dirties its output's pages).
func IsWrite(syscall string) bool { return ClassOf(syscall) == ClassWrite }

// IsSync reports whether the call is of the fsync family.
func IsSync(syscall string) bool { return ClassOf(syscall) == ClassSync }

// SyncsDevice reports whether a call makes its data durable before it
// returns, and so may wait for a journal commit and a device flush: the
// fsync family, and a write to a file opened O_DSYNC or O_SYNC (Dsync).
func SyncsDevice(r *Syscall) bool { return IsSync(r.Syscall) || r.Dsync }

// IsCopy reports whether the call is an in-kernel copy (sendfile, splice,
// copy_file_range): traced as a read of its source.
func IsCopy(syscall string) bool {
	return syscall == "sendfile" || syscall == "splice" || syscall == "copy_file_range"
}

// RequestClass classifies an asynchronous request's op (Request.Op: the
// iocb's IOCB_CMD_* or the SQE's IORING_OP_* name) like ClassOf a call's:
// the one place the totals and the stories decide what a request reads.
func RequestClass(op string) Class {
	switch op {
	case "read", "readv", "read_fixed":
		return ClassRead
	case "write", "writev", "write_fixed":
		return ClassWrite
	case "fsync", "fdatasync", "sync_file_range":
		return ClassSync
	}
	return ClassOther
}
