package session

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
