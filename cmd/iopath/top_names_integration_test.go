package main

// Privileged tests of what `iopath top` and `iopath serve --per-comm` name
// their numbers by: a file by its (dev, inode, i_generation), a process by
// its main thread's current comm.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testutil"
	"github.com/iopath/iopath/topview"
	"golang.org/x/sys/unix"
)

// TestTopReusedInode: a file written and read, deleted, then a new file
// that gets the same inode number (on a fresh ext4, the lowest free one)
// written, synced and read: two file rows, each under its own name with
// its own bytes, and each one's dirty pages cleaned on its own row (the
// deleted file's dropped, the new one's written by its fsync). The rows
// were merged under the deleted file's name: the aggregates' file key had
// no i_generation.
func TestTopReusedInode(t *testing.T) {
	needRoot(t)
	// A filesystem no other process allocates inodes on: the VM's fresh
	// test disk, else a loop device's ext4 of this test's own.
	dir := os.Getenv("IOPATH_TESTDISK")
	if dir == "" || os.Getenv("IOPATH_VM") != "1" {
		dir = testutil.LoopExt4(t, 64<<20).Dir
	} else {
		dir = diskDir(t)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	a, b := filepath.Join(dir, "a.tmp"), filepath.Join(dir, "b0")
	script := `head -c 16384 /dev/zero > "$1"; cat "$1" > /dev/null; stat -c 'ino %i' "$1"; rm "$1"
head -c 8192 /dev/zero > "$2"; sync "$2"; cat "$2" > /dev/null; stat -c 'ino %i' "$2"`
	stdout, stderr, code := runIopath(t, dir, "top", "--json", "--interval", "100ms", "--rows", "0", "--",
		"sh", "-c", script, "sh", a, b)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	run := parseTop(t, stdout)
	var inos []uint64
	for _, l := range run.other {
		var n uint64
		if _, err := fmt.Sscanf(l, "ino %d", &n); err == nil {
			inos = append(inos, n)
		}
	}
	if len(inos) != 2 || inos[0] != inos[1] {
		t.Fatalf("inode numbers %v (command output %q): want one number, reused", inos, run.other)
	}
	rows := map[string]*topview.IOJSON{}
	for i, f := range run.total.Files {
		if f.Ino == inos[0] && f.Dev == dev {
			if rows[f.Name] != nil {
				t.Errorf("two rows named %s", f.Name)
			}
			rows[f.Name] = &run.total.Files[i]
		}
	}
	ra, rb := rows["a.tmp"], rows["b0"]
	if len(rows) != 2 || ra == nil || rb == nil {
		t.Fatalf("rows of inode %d: %v; want a.tmp and b0 (all files: %+v)", inos[0], keys(rows), run.total.Files)
	}
	if ra.Gen == rb.Gen {
		t.Errorf("both rows of generation %d", ra.Gen)
	}
	for _, c := range []struct {
		r          *topview.IOJSON
		bytes      uint64
		syncs      uint64
		name       string
		dirtyPages uint64
	}{{ra, 16384, 0, "a.tmp", 4}, {rb, 8192, 1, "b0", 2}} {
		if c.r.WriteBytes != c.bytes || c.r.ReadBytes != c.bytes || c.r.Syncs != c.syncs {
			t.Errorf("%s: %d bytes written, %d read, %d syncs; want %d, %d, %d", c.name, c.r.WriteBytes, c.r.ReadBytes, c.r.Syncs,
				c.bytes, c.bytes, c.syncs)
		}
		if c.r.DirtiedPages != c.dirtyPages || c.r.DirtyPending != 0 {
			t.Errorf("%s: %d pages dirtied, %d pending; want %d, none pending (dropped by the delete, written by the fsync)",
				c.name, c.r.DirtiedPages, c.r.DirtyPending, c.dirtyPages)
		}
	}
	if rb.SyncP50Ns == nil || ra.SyncP50Ns != nil {
		t.Errorf("sync latency: b0 %v, a.tmp %v; want b0's fsync only", rb.SyncP50Ns, ra.SyncP50Ns)
	}
}

func keys(m map[string]*topview.IOJSON) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestTopFollowsComm: a shell reads a file, renames itself (a write to
// /proc/PID/comm: __set_task_comm, as prctl(PR_SET_NAME) does), reads
// another: the first read counts under sh (an ended part), the second
// and the rename's own write under the new name, one pid. The new name's
// calls were counted under sh: the comm was read once, at the first call.
func TestTopFollowsComm(t *testing.T) {
	needRoot(t)
	tmp := diskDir(t)
	f1, f2 := twoFiles(t, tmp)
	// dash's builtins: read(2) a byte at a time, one write(2) for printf.
	run, sh, renamed := topParts(t, tmp, `read x < "$1"; printf iopwriter > /proc/$$/comm; read y < "$2"`, []string{f1, f2}, "sh", "iopwriter")
	// The renamed part: f2's 8 bytes and "iopwriter" written to comm.
	if renamed.ReadBytes != 8 || renamed.WriteBytes != uint64(len("iopwriter")) {
		t.Errorf("iopwriter read %d bytes, wrote %d; want 8 and %d", renamed.ReadBytes, renamed.WriteBytes, len("iopwriter"))
	}
	if sh.ReadBytes < 4 || sh.WriteBytes != 0 {
		t.Errorf("sh read %d bytes (want f1's 4 and its start's), wrote %d (want 0)", sh.ReadBytes, sh.WriteBytes)
	}
	var intervals uint64
	for _, iv := range run.intervals {
		for _, p := range iv.Processes {
			if p.Pid == sh.Pid && strings.HasPrefix(p.Comm, "iopwriter") {
				intervals += p.ReadBytes
			}
		}
	}
	if intervals != renamed.ReadBytes {
		t.Errorf("intervals: %d bytes read under iopwriter; the total %d", intervals, renamed.ReadBytes)
	}
}

// TestServePerCommFollowsRename: `serve --per-comm A,B`, a shell that
// names itself A, reads a file, names itself B, reads another: A's series
// have the first read and the first rename's write, B's the second. A
// comm read once (at the first call) put everything under sh.
func TestServePerCommFollowsRename(t *testing.T) {
	needRoot(t)
	// The rename is followed per kernel by TestTopFollowsComm; serve's side
	// is not the kernel's (and under TCG serve was slow to start on 5.10).
	testutil.KernelIndependent(t)
	tmp := diskDir(t)
	f1, f2 := twoFiles(t, tmp)
	// Names no other process on the machine has (serve counts every one).
	a, b := fmt.Sprintf("iopA%d", os.Getpid()%100000), fmt.Sprintf("iopB%d", os.Getpid()%100000)
	_, addr, log := startServe(t, tmp, "--per-comm", a+","+b)
	sh := exec.Command("sh", "-c", `printf "$3" > /proc/$$/comm; read x < "$1"; printf "$4" > /proc/$$/comm; read y < "$2"`, "sh", f1, f2, a, b)
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("sh: %v %s", err, out)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	value := func(comm, op string) float64 {
		prefix := fmt.Sprintf("iopath_process_syscall_bytes_total{comm=%q,op=%q} ", comm, op)
		for _, l := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("%s: %v", l, err)
				}
				return f
			}
		}
		t.Fatalf("no series %s in /metrics (serve: %s)", prefix, log.String())
		return 0
	}
	// The write that renames counts under the new name (the rename happens
	// inside it, the call ends after).
	for _, c := range []struct {
		comm         string
		read, writes float64
	}{{a, 4, float64(len(a))}, {b, 8, float64(len(b))}} {
		if r, w := value(c.comm, "read"), value(c.comm, "write"); r != c.read || w != c.writes {
			t.Errorf("comm %s: %v bytes read, %v written; want %v and %v", c.comm, r, w, c.read, c.writes)
		}
	}
}

// twoFiles writes dir/before ("abc\n", 4 bytes) and dir/after
// ("defghij\n", 8 bytes).
func twoFiles(t *testing.T, dir string) (string, string) {
	t.Helper()
	f1, f2 := filepath.Join(dir, "before"), filepath.Join(dir, "after")
	for f, data := range map[string]string{f1: "abc\n", f2: "defghij\n"} {
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f1, f2
}
