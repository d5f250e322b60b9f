package record

import (
	"strconv"
)

// TypeRequest is the type of an asynchronous request's record.
const TypeRequest Type = "request"

// Engine is the asynchronous IO interface a request came through.
type Engine string

// Engines.
const (
	EngineLibaio  Engine = "libaio"
	EngineIOUring Engine = "io_uring"
)

// Worker says which thread ran a request's IO: the submitting thread inside
// its submission call (inline), an io_uring io-wq worker, or the SQPOLL
// thread.
type Worker string

// Workers.
const (
	WorkerInline Worker = "inline"
	WorkerIOWQ   Worker = "io-wq"
	WorkerSQPoll Worker = "sqpoll"
)

// Result is a request's result as its completion event gave it: bytes, or
// the errno's name; "unavailable" when the completion was never seen (the
// application never reaped it while traced, or the event was lost).
type Result struct {
	Bytes int64
	Error string // errno name (EIO, EAGAIN, ...); "" on success
	Known bool
}

// MarshalJSON writes bytes as a number, an errno as its name.
func (r Result) MarshalJSON() ([]byte, error) {
	switch {
	case !r.Known:
		return []byte(`"unavailable"`), nil
	case r.Error != "":
		return strconv.AppendQuote(nil, r.Error), nil
	}
	return strconv.AppendInt(nil, r.Bytes, 10), nil
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (r *Result) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		s, err := strconv.Unquote(string(b))
		if err != nil {
			return err
		}
		*r = Result{Error: s, Known: s != "unavailable"}
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return err
	}
	*r = Result{Bytes: n, Known: true}
	return nil
}

// Request is one asynchronous IO request ("type":"request"): a libaio
// iocb or an io_uring submission, with the same story a read/write call
// gets (cache, bios, dirtied pages) plus where and when it ran. Times are
// the kernel's monotonic clock (ns); 0 means not seen, and the field is
// then listed in Unavailable.
type Request struct {
	Type   Type   `json:"type"`
	Engine Engine `json:"engine"`
	Op     string `json:"op"` // read, write, fsync, fdatasync, ... (the iocb's opcode)
	OpID   uint64 `json:"op_id"`
	// SubmitOpID: the io_submit / io_uring_enter call that submitted it
	// (its op_id; 0 for SQPOLL).
	SubmitOpID uint64 `json:"submit_op_id"`
	UserData   uint64 `json:"user_data"` // aio_data of the iocb / user_data of the SQE
	Pid        uint32 `json:"pid"`
	Tid        uint32 `json:"tid"` // the submitting thread
	Comm       string `json:"comm"`
	WorkerTid  uint32 `json:"worker_tid"` // the thread that ran the IO
	Worker     Worker `json:"worker"`
	Fd         int64  `json:"fd"`
	Path       string `json:"path,omitempty"`
	Dev        string `json:"dev"`
	Ino        uint64 `json:"ino"`
	FS         string `json:"fs,omitempty"`
	Offset     int64  `json:"offset"`
	// RequestedBytes: the iocb's length (vectored: the sum of its iovecs).
	RequestedBytes uint64 `json:"requested_bytes"`
	Result         Result `json:"result"`
	SubmitNs       uint64 `json:"submit_ns"` // the submission call's entry
	// CompleteNs: the kernel completed it: its last bio's completion for
	// direct IO; for a request the submission call completed itself (a
	// buffered libaio read or write), the end of its processing there.
	CompleteNs uint64 `json:"complete_ns"`
	ReapNs     uint64 `json:"reap_ns"` // the application collected its completion (io_getevents' exit)
	// InflightAtIssue: requests iopath saw issued and not completed on the
	// device (the traced processes' and writeback's) when its first bio's
	// request was issued, that one included; 0 without a bio.
	InflightAtIssue uint32   `json:"inflight_at_issue"`
	Direct          bool     `json:"direct"`
	BlockedNs       uint64   `json:"blocked_ns"` // iowait of the submitting thread while it processed the request
	Cache           Cache    `json:"cache"`
	Bios            []Bio    `json:"bios"`
	DirtiedPages    uint32   `json:"dirtied_pages"`
	Unavailable     []string `json:"unavailable,omitempty"`
}

// TouchedDisk says whether a request is worth its story by default: it
// caused a bio, missed or added pages, dirtied pages, or failed.
func (r *Request) TouchedDisk() bool {
	c := r.Cache
	return len(r.Bios) > 0 || c.PagesMissed > 0 || c.PagesAdded > 0 || r.DirtiedPages > 0 || r.Result.Error != ""
}

// TypeAsyncCall is the type of an asynchronous IO system call's record.
const TypeAsyncCall Type = "async_call"

// AsyncCall is one submission or reaping call of asynchronous IO
// ("type":"async_call"): io_submit, io_getevents / io_pgetevents or
// io_uring_enter. Its op_id is the submit_op_id of the requests it
// submitted. Times are the kernel's monotonic clock (ns).
type AsyncCall struct {
	Type    Type   `json:"type"`
	Engine  Engine `json:"engine"`
	Syscall string `json:"syscall"` // io_submit, io_getevents (io_pgetevents too), io_uring_enter
	OpID    uint64 `json:"op_id"`
	TimeNs  uint64 `json:"time_ns"` // the call's entry
	// DurationNs: entry to exit, the time it waited for completions included.
	DurationNs uint64 `json:"duration_ns"`
	Pid        uint32 `json:"pid"`
	Tid        uint32 `json:"tid"`
	Comm       string `json:"comm"`
	Error      string `json:"error,omitempty"` // errno name of a failed call
	// ToSubmit: iocbs passed to io_submit (nr), SQEs asked of io_uring_enter.
	ToSubmit uint32 `json:"to_submit"`
	// Submitted: the return value of io_submit / io_uring_enter (requests
	// accepted); 0 for io_getevents and a failed call.
	Submitted uint32 `json:"submitted"`
	// MinComplete: io_uring_enter's min_complete, io_getevents' min_nr.
	MinComplete uint32 `json:"min_complete"`
	// Flags: io_uring_enter's IORING_ENTER_* flags by name (GETEVENTS,
	// SQ_WAKEUP, SQ_WAIT, EXT_ARG, REGISTERED_RING; others by bit number).
	Flags []string `json:"flags,omitempty"`
	// Completed: io_uring_enter: CQEs this thread posted during the call
	// (io_uring_complete events between its entry and exit); io_getevents:
	// the events it returned.
	Completed uint32 `json:"completed"`
	// ReapedOpIDs: io_getevents: the requests whose events it returned, in
	// order (a request whose io_submit record had not arrived is missing:
	// then "reaped_op_ids" is listed in Unavailable).
	ReapedOpIDs []uint64 `json:"reaped_op_ids,omitempty"`
	Unavailable []string `json:"unavailable,omitempty"`
}
