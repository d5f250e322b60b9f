package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPid(t *testing.T) {
	for _, c := range []struct {
		pid  int
		want string
	}{
		{0, "no process with pid 0"},
		{1<<22 + 1, "no process with pid 4194305"},
		{os.Getpid(), "is iopath itself"},
	} {
		if err := CheckPid(c.pid); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckPid(%d) = %v, want %q", c.pid, err, c.want)
		}
	}
	if st, err := os.ReadFile("/proc/2/stat"); err == nil && strings.Contains(string(st), "(kthreadd)") {
		if err := CheckPid(2); err == nil || !strings.Contains(err.Error(), "is a kernel thread") {
			t.Errorf("CheckPid(2) (kthreadd) = %v", err)
		}
	}
	if err := CheckPid(os.Getppid()); err != nil {
		t.Errorf("CheckPid(parent) = %v, want nil", err)
	}
}

func TestReadyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ready")
	remove, err := ReadyFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || strings.TrimSpace(string(b)) == "" {
		t.Fatalf("ready file: %q, %v", b, err)
	}
	if _, err := ReadyFile(p); err == nil || !strings.Contains(err.Error(), "give a path that does not exist yet") {
		t.Errorf("second ReadyFile(%s) = %v", p, err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("a refused ready file removed the existing one: %v", err)
	}
	remove()
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("after remove: %v", err)
	}
	if remove, err := ReadyFile(""); err != nil || remove == nil {
		t.Errorf(`ReadyFile("") = %v`, err)
	}
}

func TestLookCommand(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		dir: "is a directory", plain: "is not executable", "iopath-no-such-command": "not found",
	} {
		if _, err := LookCommand(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LookCommand(%q) = %v, want %q", name, err, want)
		}
	}
	if p, err := LookCommand("sh"); err != nil || !filepath.IsAbs(p) {
		t.Errorf("LookCommand(sh) = %q, %v", p, err)
	}
}
