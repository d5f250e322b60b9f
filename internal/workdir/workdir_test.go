package workdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseOwner(t *testing.T) {
	for _, c := range []struct {
		name string
		want Owner
		ok   bool
	}{
		{"iopath-workload-123-ns4026531836-987", Owner{123, 4026531836}, true},
		{"iopath-workload-123-987", Owner{123, 0}, true}, // an older iopath's
		{"iopath-workload-123-nsx-987", Owner{}, false},
		{"iopath-workload-123abc", Owner{}, false},
		{"iopath-workload-0-ns1-2", Owner{}, false},
		{"iopath-demo-123-ns1-2", Owner{}, false}, // another kind
	} {
		o, ok := ParseOwner(c.name, "workload")
		if o != c.want || ok != c.ok {
			t.Errorf("ParseOwner(%q) = %+v, %v; want %+v, %v", c.name, o, ok, c.want, c.ok)
		}
	}
}

// A directory is removed only when its owner is provably dead: in this
// process's pid namespace and no such pid there. A dead pid of another
// namespace (a container's run seen from the host, or the host's seen from
// a container, issue 10) may be a running process there: it is left.
func TestCleanStale(t *testing.T) {
	ns := PidNamespace()
	if ns == 0 {
		t.Skip("no /proc/self/ns/pid")
	}
	base := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	d := strconv.Itoa(dead.Process.Pid)
	here := "-ns" + strconv.FormatUint(ns, 10) + "-"
	mk := func(name string) string {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk("iopath-workload-" + d + here + "123")
	keep := []string{
		mk("iopath-workload-" + strconv.Itoa(os.Getpid()) + here + "1"),          // this process
		mk("iopath-workload-1" + here + "2"),                                     // a running process (init)
		mk("iopath-workload-" + d + "-ns" + strconv.FormatUint(ns+1, 10) + "-4"), // another namespace's pid
		mk("iopath-workload-" + d + "-5"),                                        // an older iopath's: namespace unknown
		mk("iopath-workload-123abc"),                                             // not named by Make
		mk("iopath-demo-" + d + here + "3"),                                      // another kind
	}
	// A dead process's directory whose files the user kept (--keep): a
	// later traced run removed it, kept file and all (a new user, 2026-12-07).
	kept := mk("iopath-workload-" + d + here + "6")
	if err := MarkKept(kept); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, kept)
	var notes strings.Builder
	CleanStale(base, "workload", &notes)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s of a dead process left: %v", stale, err)
	}
	if want := "iopath: removed " + stale + ", left by iopath pid " + d + " which no longer runs\n"; notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
	for _, k := range keep {
		if _, err := os.Stat(k); err != nil {
			t.Errorf("%s removed: %v", k, err)
		}
	}
	p, err := Make(base, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ParseOwner(filepath.Base(p), "demo"); !ok || o != (Owner{os.Getpid(), ns}) {
		t.Errorf("Make: %s parses as %+v, %v", p, o, ok)
	}
}
