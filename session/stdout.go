package session

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// SharedStdout is iopath's stdout when the traced command writes to it too
// (`iopath trace -- CMD` without -o). Every write of iopath's (whole
// records) starts on a new line, with a '\n' first when the command's
// output may have stopped mid-line:
//   - stdout is a pipe: the command gets a pipe of iopath's, relayed to
//     stdout, so iopath knows exactly where the command's last line stands
//     (nothing else changes for a command whose stdout was a pipe already);
//   - stdout is a regular file: iopath reads the byte before the file's
//     offset (a command writing between that check and iopath's write can
//     still end a line of its own on a record: use -o for exact output);
//   - anything else (a terminal): iopath cannot know, and writes the
//     '\n' whenever the command may have written since.
type SharedStdout struct {
	out     *os.File
	pw      *os.File // the command's end of the relay pipe (pipe mode)
	rfd     int      // the relay's end, non-blocking (pipe mode; -1 otherwise)
	rd      *os.File // file mode: stdout's file opened again for reading
	pwClose sync.Once
	stop    atomic.Bool

	mu      sync.Mutex
	mode    int
	partial bool // pipe mode: the last byte written was not '\n'
	started bool // the command runs: it may have written
	eof     bool // pipe mode: every writer closed the pipe
	broken  bool // pipe mode: stdout's reader is gone
	buf     []byte
	relayed chan struct{}
}

const (
	modeUnknown = iota
	modePipe
	modeFile
)

// ShareStdout prepares out to be shared with a command.
func ShareStdout(out *os.File) (*SharedStdout, error) {
	s := &SharedStdout{out: out, rfd: -1}
	var st unix.Stat_t
	if err := unix.Fstat(int(out.Fd()), &st); err == nil {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO:
			s.mode = modePipe
		case unix.S_IFREG:
			// A shell's `>` opens it write-only: read it through another
			// open file (root can; if not, iopath cannot know).
			if rd, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(out.Fd()))); err == nil {
				s.mode, s.rd = modeFile, rd
			}
		}
	}
	if s.mode == modePipe {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return nil, err
		}
		if err := unix.SetNonblock(p[0], true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return nil, err
		}
		s.rfd, s.pw = p[0], os.NewFile(uintptr(p[1]), "|iopath-stdout")
		s.buf, s.relayed = make([]byte, 64<<10), make(chan struct{})
		go s.relay()
	}
	return s, nil
}

// CommandStdout is the file to give the command as its stdout.
func (s *SharedStdout) CommandStdout() *os.File {
	if s.pw != nil {
		return s.pw
	}
	return s.out
}

// Started says the command runs (it holds its stdout now).
func (s *SharedStdout) Started() {
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	s.closePw()
}

func (s *SharedStdout) closePw() {
	if s.pw != nil {
		s.pwClose.Do(func() { s.pw.Close() })
	}
}

// relay copies the command's output to stdout as it comes. Bytes are read
// only with s.mu held (drain), so a record written meanwhile comes after
// everything the command wrote before it, and iopath knows whether that
// ended a line.
func (s *SharedStdout) relay() {
	defer close(s.relayed)
	for !s.stop.Load() {
		s.mu.Lock()
		fd := s.rfd
		s.mu.Unlock()
		if fd < 0 {
			return
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 100); err != nil && err != unix.EINTR || n == 0 {
			continue
		}
		s.mu.Lock()
		s.drain()
		done := s.eof || s.broken
		s.mu.Unlock()
		if done {
			return
		}
	}
}

// drain copies what the pipe holds now to stdout (s.mu held). When
// stdout's reader is gone it closes the pipe, so the command's next write
// gets EPIPE (or SIGPIPE), as it would have on stdout.
func (s *SharedStdout) drain() {
	for !s.eof && !s.broken {
		n, err := unix.Read(s.rfd, s.buf)
		switch {
		case n > 0:
			if _, werr := s.out.Write(s.buf[:n]); werr != nil {
				s.broken = true
				unix.Close(s.rfd)
				s.rfd = -1
			}
			s.partial = s.buf[n-1] != '\n'
		case n == 0 && err == nil:
			s.eof = true
		case err == unix.EINTR:
		default: // EAGAIN: nothing more for now
			return
		}
	}
}

// Write writes p, which ends with '\n', starting on a new line.
func (s *SharedStdout) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == modePipe {
		s.drain()
	}
	if s.midLine() {
		b := make([]byte, 0, len(p)+1)
		b = append(append(b, '\n'), p...)
		if _, err := s.out.Write(b); err != nil {
			return 0, err
		}
	} else if _, err := s.out.Write(p); err != nil {
		return 0, err
	}
	s.partial = p[len(p)-1] != '\n'
	return len(p), nil
}

// midLine says whether stdout may be in the middle of a line now.
func (s *SharedStdout) midLine() bool {
	switch s.mode {
	case modePipe:
		return s.partial
	case modeFile:
		fd := int(s.out.Fd())
		off, err := unix.Seek(fd, 0, unix.SEEK_CUR)
		if fl, ferr := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); ferr == nil && fl&unix.O_APPEND != 0 {
			var st unix.Stat_t
			if err = unix.Fstat(fd, &st); err == nil {
				off = st.Size
			}
		}
		if err != nil {
			return true
		}
		if off == 0 {
			return false
		}
		var c [1]byte
		if n, err := s.rd.ReadAt(c[:], off-1); err != nil || n != 1 {
			return true
		}
		return c[0] != '\n'
	}
	return s.started || s.partial
}

// finishWait is how long Finish relays, after the run, the output of
// processes the command started that still hold its stdout.
const finishWait = 5 * time.Second

// Finish, at the end of a run, relays what processes the command left
// behind (`sh -c 'cmd &'`) still write, until every writer closed the
// relay pipe, as a reader of the real stdout would get it, then Closes.
// It waits at most finishWait, or until stop is closed (a signal); it
// says on notes when it stopped a writer still there: what that writes
// from then on gets EPIPE.
func (s *SharedStdout) Finish(stop <-chan struct{}, notes io.Writer) {
	if s.relayed != nil {
		s.closePw()
		t := time.NewTimer(finishWait)
		defer t.Stop()
		select {
		case <-s.relayed:
		case <-stop:
		case <-t.C:
			fmt.Fprintf(notes, "iopath: a process the command started still holds its stdout %s after the run: iopath stopped relaying it, what it writes from now on gets EPIPE (use -o FILE: the command then keeps stdout itself)\n", finishWait)
		}
	}
	s.Close()
}

// Close stops relaying: what the command (or a process that inherited its
// stdout) wrote until now is copied; a later write to the pipe gets EPIPE.
func (s *SharedStdout) Close() {
	if s.rd != nil {
		s.rd.Close()
	}
	if s.relayed == nil {
		return
	}
	s.closePw()
	s.stop.Store(true)
	<-s.relayed
	s.mu.Lock()
	if s.rfd >= 0 {
		s.drain()
		unix.Close(s.rfd)
		s.rfd = -1
	}
	s.mu.Unlock()
}
