package timeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Link(a, link); err != nil {
		t.Fatal(err)
	}
	std, err := os.Create(filepath.Join(dir, "std"))
	if err != nil {
		t.Fatal(err)
	}
	defer std.Close()
	other, err := os.Create(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fdPath := fmt.Sprintf("/proc/self/fd/%d", std.Fd())
	// A link to a file not created yet, by a relative and an absolute
	// target (the breaker's `-o x --timeline L`, L → x: the timeline
	// replaced the records, exit 0).
	ahead, ahead2 := filepath.Join(dir, "ahead"), filepath.Join(dir, "ahead2")
	if err := os.Symlink("notyet", ahead); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "notyet"), ahead2); err != nil {
		t.Fatal(err)
	}
	notyet := filepath.Join(dir, "notyet")
	o := func(p string) Named { return Named{"-o", p, p != ""} }
	tl := func(p string) Named { return Named{"--timeline", p, p != ""} }
	rp := func(p string) Named { return Named{"--report", p, p != ""} }
	rf := func(p string) Named { return Named{"--ready-file", p, p != ""} }
	for _, c := range []struct {
		outs []Named
		want string
	}{
		{[]Named{o(a), tl(dir + "/./a")}, "-o and --timeline both name " + a},
		{[]Named{o(a), rp(link)}, "-o and --report both name " + a}, // one inode
		{[]Named{o(a), tl(filepath.Join(dir, "b"))}, ""},
		{[]Named{tl(a), rp(a)}, "--timeline and --report both name " + a},
		{[]Named{o(a), rf(a)}, "-o and --ready-file both name " + a},
		{[]Named{tl(a), rf(a)}, "--timeline and --ready-file both name " + a},
		{[]Named{o(notyet), tl(ahead)}, "-o and --timeline both name " + notyet},
		{[]Named{o(ahead2), rf(notyet)}, "-o and --ready-file both name " + ahead2},
		{[]Named{rp(ahead), tl(ahead2)}, "--report and --timeline both name " + ahead},
		{[]Named{o(ahead), tl(filepath.Join(dir, "elsewhere"))}, ""},
		{[]Named{o(""), tl("")}, ""},
		{[]Named{{"-o", "", true}}, `-o "" is an empty path`},
		{[]Named{o(a), {"--timeline", "", true}}, `--timeline "" is an empty path`},
		{[]Named{tl(std.Name())}, "--timeline " + std.Name() + " is also iopath's standard output (> " + std.Name() + ")"},
		{[]Named{rp(std.Name())}, "--report " + std.Name() + " is also iopath's standard output"},
		{[]Named{o(other.Name())}, "-o " + other.Name() + " is also iopath's standard error (2> " + other.Name() + ")"},
		// as /dev/stdout is: a link to the open file
		{[]Named{tl(fdPath)}, "--timeline " + fdPath + " is also iopath's standard output"},
	} {
		err := CheckOutputs(std, other, c.outs...)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckOutputs(%v) = %v, want %q", c.outs, err, c.want)
		}
	}
}
