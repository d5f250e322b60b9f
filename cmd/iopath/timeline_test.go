package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// --timeline/--report with a path that cannot be written: one line before
// tracing starts (no "attached" line, no root needed), exit 1, nothing left.
func TestTimelineBadPath(t *testing.T) {
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "no-such-dir")
	checkRefused(t, tmp, "directory "+missing+" does not exist", "trace", "--timeline", filepath.Join(missing, "t.json"), "--", "true")
	checkRefused(t, tmp, "directory "+missing+" does not exist", "demo", "read-1byte", "--report", filepath.Join(missing, "r.html"))
	checkRefused(t, tmp, "is a directory", "trace", "--report", tmp, "--", "true")
	same := filepath.Join(tmp, "x")
	checkRefused(t, tmp, "both name", "demo", "seq-vs-rand", "--timeline", same, "--report", same)
	os.Remove(same)
}

// A read-only directory: a read-only tmpfs (root, in a private mount
// namespace) or a directory without write permission (other users).
func TestTimelineReadOnlyDir(t *testing.T) {
	tmp := t.TempDir()
	ro := filepath.Join(tmp, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"trace", "--timeline", filepath.Join(ro, "t.json"), "--", "true"}
	if os.Geteuid() != 0 {
		os.Chmod(ro, 0o555)
		checkRefused(t, tmp, "cannot create a file in "+ro+" (permission denied)", args...)
		return
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	self, argv, _ := selfCommandForTest()
	script := `mount -t tmpfs -o ro none "$RO_DIR" && exec "$@"`
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", self}, append(argv, args...)...)...)
	cmd.Env = append(os.Environ(), "IOPATH_TEST_HELPER=1", "RO_DIR="+ro, "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	want := "iopath: --timeline " + filepath.Join(ro, "t.json") + ": cannot create a file in " + ro + " (read-only file system): choose a writable directory\n"
	if err == nil || string(out) != want {
		t.Errorf("read-only directory: err %v, output %q; want exit 1 and %q", err, out, want)
	}
	if l := leftovers(ro); len(l) > 0 {
		t.Errorf("left %v", l)
	}
	if strings.Contains(string(out), "attached") {
		t.Errorf("tracing started before the path was checked")
	}
}
