package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The exec gate. Exec stops its child at ptrace's exec stop and adds it to
// the traced set there; if that exec were the command's own, its reads
// would be over before tracing began: execve reads the program's first
// pages (the ELF header, with readahead: 148 KiB of a cold 148 KiB `ls`),
// which the kernel counts in the process's read_bytes, and a cold command
// came out with 0 disk bytes read and nothing unattributed. So the child
// first execs a trampoline held in memory (a memfd: its own exec reads no
// disk), stops there, and once traced runs the trampoline's few
// instructions, which exec the command: that execve, its reads (the
// unattributed cause exec) and everything after are the command's, in the
// trace. The trampoline is not a Go program, whose runtime would read
// /proc and /sys files at start as the command's process.
//
// The trampoline, x86-64 (assembled with clang; argv is [gate, PATH,
// ARGV0, ARGS...], fd 3 the write end of a pipe to iopath):
//
//	mov edi, 3; mov esi, 2; mov edx, 1; mov eax, 72; syscall   // fcntl(3, F_SETFD, FD_CLOEXEC)
//	mov rdi, [rsp]; lea rsi, [rsp+8]; lea rdx, [rsi+rdi*8+8]    // argc, argv, envp
//	mov rdi, [rsi+8]; add rsi, 16; mov eax, 59; syscall        // execve(PATH, &argv[2], envp)
//	neg eax; mov [rsp-4], eax                                  // failed: errno
//	mov edi, 3; lea rsi, [rsp-4]; mov edx, 4; mov eax, 1; syscall // write(3, &errno, 4)
//	mov edi, 127; mov eax, 231; syscall                        // exit_group(127)
//
// A command that execs closes fd 3 (close-on-exec): iopath reads EOF. One
// that cannot be exec'd writes its errno there first.
var gateCode = []byte{
	0xbf, 0x03, 0x00, 0x00, 0x00, 0xbe, 0x02, 0x00, 0x00, 0x00, 0xba, 0x01,
	0x00, 0x00, 0x00, 0xb8, 0x48, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x8b,
	0x3c, 0x24, 0x48, 0x8d, 0x74, 0x24, 0x08, 0x48, 0x8d, 0x54, 0xfe, 0x08,
	0x48, 0x8b, 0x7e, 0x08, 0x48, 0x83, 0xc6, 0x10, 0xb8, 0x3b, 0x00, 0x00,
	0x00, 0x0f, 0x05, 0xf7, 0xd8, 0x89, 0x44, 0x24, 0xfc, 0xbf, 0x03, 0x00,
	0x00, 0x00, 0x48, 0x8d, 0x74, 0x24, 0xfc, 0xba, 0x04, 0x00, 0x00, 0x00,
	0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xbf, 0x7f, 0x00, 0x00, 0x00,
	0xb8, 0xe7, 0x00, 0x00, 0x00, 0x0f, 0x05,
}

// gateELF is the trampoline as a static ELF64 executable: the file header,
// one PT_LOAD program header mapping the whole file read+execute at
// 0x400000, and gateCode, the entry point.
func gateELF() []byte {
	const base, ehsize, phsize = 0x400000, 64, 56
	size := ehsize + phsize + len(gateCode)
	b := make([]byte, ehsize+phsize, size)
	le := binary.LittleEndian
	copy(b, []byte{0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little endian */, 1 /* version */})
	le.PutUint16(b[16:], 2)                  // e_type ET_EXEC
	le.PutUint16(b[18:], 62)                 // e_machine EM_X86_64
	le.PutUint32(b[20:], 1)                  // e_version
	le.PutUint64(b[24:], base+ehsize+phsize) // e_entry
	le.PutUint64(b[32:], ehsize)             // e_phoff
	le.PutUint16(b[52:], ehsize)             // e_ehsize
	le.PutUint16(b[54:], phsize)             // e_phentsize
	le.PutUint16(b[56:], 1)                  // e_phnum
	p := b[ehsize:]
	le.PutUint32(p[0:], 1)             // p_type PT_LOAD
	le.PutUint32(p[4:], 5)             // p_flags PF_R|PF_X
	le.PutUint64(p[16:], base)         // p_vaddr
	le.PutUint64(p[24:], base)         // p_paddr
	le.PutUint64(p[32:], uint64(size)) // p_filesz
	le.PutUint64(p[40:], uint64(size)) // p_memsz
	le.PutUint64(p[48:], 0x1000)       // p_align
	return append(b, gateCode...)
}

var (
	gateOnce sync.Once
	gateFile *os.File
	gateErr  error
)

// errGateRefused: the kernel would not exec the gate (vm.memfd_noexec, a
// security module): the command is exec'd directly, its execve's reads
// untraced.
var errGateRefused = errors.New("the exec gate cannot run here")

var gateNoteOnce sync.Once

// gateRefusedNote says once on notes that the command's execve reads are
// not traced, and why.
func gateRefusedNote(notes io.Writer, err error) {
	gateNoteOnce.Do(func() {
		if b, _ := os.ReadFile("/proc/sys/vm/memfd_noexec"); len(b) > 0 && b[0] != '0' {
			err = fmt.Errorf("%w; vm.memfd_noexec is %s", err, strings.TrimSpace(string(b)))
		}
		if notes != nil {
			fmt.Fprintf(notes, "iopath: %v: the command's own execve (its reads of the program) is not traced\n", err)
		}
	})
}

// command is c as an exec.Cmd of the program at path (argv c.Args), in a
// process group of its own when own, stopped at its exec by ptrace.
func command(c Command, path string, own bool) *exec.Cmd {
	cmd := exec.Command(path)
	cmd.Args = c.Args
	cmd.Env = c.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true, Pdeathsig: c.DeathSignal, Setpgid: own}
	return cmd
}

// startGated starts the exec gate for c's program at path, stopped at the
// gate's exec; answer is the read end of the gate's fd 3 (execResult).
// errGateRefused wraps a refusal to exec the gate.
func startGated(c Command, path string, own bool) (cmd *exec.Cmd, answer *os.File, err error) {
	gate, err := execGatePath()
	if err != nil {
		return nil, nil, fmt.Errorf("%w (%w)", errGateRefused, err)
	}
	answer, answerW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd = command(c, gate, own)
	cmd.Args = gateArgs(path, c.Args)
	cmd.ExtraFiles = []*os.File{answerW} // the gate's fd 3
	err = startKeepingIgnored(cmd.Start)
	answerW.Close()
	if err != nil {
		answer.Close()
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			return nil, nil, fmt.Errorf("%w (exec of its memfd: %w)", errGateRefused, err)
		}
		return nil, nil, err
	}
	return cmd, answer, nil
}

// execGatePath returns a path that execs the trampoline (/proc/self/fd/N of a
// memfd this process keeps open; close-on-exec, which an exec of it
// through that path allows).
func execGatePath() (string, error) {
	gateOnce.Do(func() {
		// MFD_EXEC (6.3+) asks for an executable memfd where
		// vm.memfd_noexec=1 would seal it non-executable; older kernels
		// refuse the flag (EINVAL) and make every memfd executable.
		fd, err := unix.MemfdCreate("iopath-exec-gate", unix.MFD_CLOEXEC|unix.MFD_EXEC)
		if errors.Is(err, unix.EINVAL) {
			fd, err = unix.MemfdCreate("iopath-exec-gate", unix.MFD_CLOEXEC)
		}
		if err != nil {
			gateErr = fmt.Errorf("memfd_create: %w", err)
			return
		}
		f := os.NewFile(uintptr(fd), "iopath-exec-gate")
		if _, err := f.Write(gateELF()); err != nil {
			f.Close()
			gateErr = fmt.Errorf("writing its memfd: %w", err)
			return
		}
		gateFile = f
	})
	if gateErr != nil {
		return "", gateErr
	}
	return fmt.Sprintf("/proc/self/fd/%d", gateFile.Fd()), nil
}

// gateArgs is the trampoline's argv for the command at path with argv args.
func gateArgs(path string, args []string) []string {
	if len(args) == 0 {
		args = []string{path}
	}
	return append([]string{"iopath-exec-gate", path}, args...)
}

// execResult waits for the trampoline's answer on r (the read end of its
// fd 3): nil when the command was exec'd (EOF), else its execve's errno.
func execResult(r io.Reader) error {
	var b [4]byte
	n, err := io.ReadFull(r, b[:])
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("the exec gate said %d bytes: %w", n, err)
	}
	return syscall.Errno(binary.LittleEndian.Uint32(b[:]))
}
