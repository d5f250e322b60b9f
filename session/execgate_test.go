package session

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
)

// The exec gate runs the command with the argv it was given (its name
// included) and the environment, and says why a command could not be
// exec'd: a missing #! interpreter (ENOENT), a file that is no program
// (ENOEXEC).
func TestExecGate(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	ch, err := Exec(Command{Path: "/bin/sh", Args: []string{"named-sh", "-c", `tr '\0' ' ' < /proc/$$/cmdline; echo "$GATE_TEST"`, "zero"},
		Env: []string{"GATE_TEST=env-ok"}, Stdout: &out}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := ch.Wait(); st.Code != 0 || !strings.HasPrefix(out.String(), "named-sh -c ") || !strings.HasSuffix(out.String(), " zero env-ok\n") {
		t.Errorf("status %+v, output %q", st, out.String())
	}
	bad := map[string]string{
		"no-interpreter": "#!/nonexistent/sh\necho hi\n",
		"no-program":     "echo hi\n",
	}
	want := map[string]syscall.Errno{"no-interpreter": syscall.ENOENT, "no-program": syscall.ENOEXEC}
	for name, text := range bad {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		ch, err := Exec(Command{Path: p}, nil)
		if err == nil {
			ch.Wait()
			t.Errorf("%s: started", name)
			continue
		}
		if !strings.Contains(err.Error(), want[name].Error()) {
			t.Errorf("%s: %v, want %v", name, err, want[name])
		}
	}
}

// The gate's ELF: a file header for x86-64 whose entry is the code right
// after the one program header, which maps the whole file.
func TestExecGateELF(t *testing.T) {
	b := gateELF()
	if string(b[:4]) != "\x7fELF" || len(b) != 64+56+len(gateCode) {
		t.Fatalf("gate ELF of %d bytes: % x", len(b), b[:16])
	}
}

// Where the kernel refuses to exec a memfd (vm.memfd_noexec=2, 6.3+), the
// command runs as before, exec'd directly, and one line says its execve's
// reads are not traced.
func TestExecGateRefused(t *testing.T) {
	testutil.NeedRoot(t)
	if _, err := os.Stat("/proc/sys/vm/memfd_noexec"); err != nil {
		t.Skip("no vm.memfd_noexec (before 6.3)")
	}
	testutil.SetSysctl(t, "vm.memfd_noexec", "2")
	cmd, out, errb := helper(t, "run", "/bin/sh", "-c", "exit 3")
	var lines []string
	for {
		l, err := out.ReadString('\n')
		if err != nil {
			break
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	cmd.Wait()
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ready ") || lines[1] != "status 3 0 0 false" ||
		strings.Count(errb.String(), "the command's own execve (its reads of the program) is not traced") != 1 {
		t.Errorf("stdout %q, stderr %q", lines, errb.String())
	}
	t.Log(strings.TrimSpace(errb.String()))
}
