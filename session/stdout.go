package session

import (
	"os"
	"strconv"
	"sync"
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
	pr      *os.File
	rd      *os.File // file mode: stdout's file opened again for reading
	pwClose sync.Once

	mu      sync.Mutex
	mode    int
	partial bool // pipe mode: the last byte written was not '\n'
	started bool // the command runs: it may have written
	relayed chan struct{}
}

const (
	modeUnknown = iota
	modePipe
	modeFile
)

// ShareStdout prepares out to be shared with a command.
func ShareStdout(out *os.File) (*SharedStdout, error) {
	s := &SharedStdout{out: out}
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
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		s.pr, s.pw, s.relayed = pr, pw, make(chan struct{})
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

// relay copies the command's output to stdout, noting whether it ended a
// line. When stdout's reader is gone it closes the pipe, so the command
// gets EPIPE (or SIGPIPE) as it would have on stdout itself.
func (s *SharedStdout) relay() {
	defer close(s.relayed)
	defer s.pr.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.pr.Read(buf)
		if n > 0 {
			s.mu.Lock()
			_, werr := s.out.Write(buf[:n])
			s.partial = buf[n-1] != '\n'
			s.mu.Unlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
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

// Close stops relaying: what the command (or a process that inherited its
// stdout) wrote until now is copied; a later write gets EPIPE.
func (s *SharedStdout) Close() {
	if s.rd != nil {
		s.rd.Close()
	}
	if s.pr == nil {
		return
	}
	s.closePw()
	s.pr.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	<-s.relayed
}
