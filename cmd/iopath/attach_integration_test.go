package main

// Which mechanism each hook gets, on this kernel and on the VM kernels
// (scripts/vmtest.sh sets IOPATH_VM_KERNEL), and that every mechanism gives
// the same read story.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/tracer"
	"golang.org/x/sys/unix"
)

// functionHooks are the design's function hooks, which have fentry and
// kprobe candidates; readahead has fexit only.
var functionHooks = []string{"vfs_read", "vfs_write", "filemap_get_pages", "do_writepages", "balance_dirty_pages"}

func doctorJSON(t *testing.T, args ...string) *doctorReport {
	t.Helper()
	stdout, stderr, code := runIopath(t, os.TempDir(), append([]string{"doctor", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("doctor: exit %d, %s", code, stderr)
	}
	var r doctorReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, stdout)
	}
	return &r
}

func mechanisms(r *doctorReport) map[string]tracer.Mechanism {
	m := map[string]tracer.Mechanism{}
	for _, h := range r.Hooks {
		m[h.Hook] = h.Mechanism
	}
	return m
}

func kprobesHere() bool {
	_, err := os.Stat("/sys/bus/event_source/devices/kprobe")
	return err == nil
}

// On a Debian VM kernel the function hooks use fentry (readahead fexit); on
// the build machine (no kprobes, fentry EPERM) their stand-ins.
func TestAttachMechanismPerKernel(t *testing.T) {
	needRoot(t)
	r := doctorJSON(t)
	m := mechanisms(r)
	if !r.RequiredOK {
		t.Fatalf("required hooks missing: %v", r.Problems)
	}
	inVM := os.Getenv("IOPATH_VM_KERNEL") != ""
	for _, h := range functionHooks {
		switch {
		case inVM && m[h] != tracer.Fentry:
			t.Errorf("%s: %s on %s, want fentry", h, m[h], r.Kernel)
		case !inVM && !kprobesHere() && m[h] != tracer.TPBTF && m[h] != tracer.Tracepoint:
			t.Errorf("%s: %s here, want a tracepoint stand-in", h, m[h])
		}
	}
	if inVM && m["readahead"] != tracer.Fentry {
		t.Errorf("readahead: %s, want fentry (fexit page_cache_sync_ra)", m["readahead"])
	}
	for _, h := range []string{"page_cache_add", "block_bio_queue", "block_rq_issue", "block_rq_complete", "iowait", "dirty_folio"} {
		if m[h] == tracer.None {
			t.Errorf("%s has no mechanism", h)
		}
	}
	t.Logf("kernel %s: %v", r.Kernel, m)
}

// --force-mechanism '*=kprobe' moves the function hooks to kprobes where the
// kernel has them (the VM kernels), and the cold-read story is unchanged.
func TestForcedKprobeReadStory(t *testing.T) {
	needRoot(t)
	if !kprobesHere() {
		t.Skip("this kernel has no kprobes (CONFIG_KPROBES off): the VM tests cover this path")
	}
	r := doctorJSON(t, "--force-mechanism", "*=kprobe")
	m := mechanisms(r)
	for _, h := range functionHooks {
		if m[h] != tracer.Kprobe {
			t.Errorf("forced: %s uses %s, want kprobe", h, m[h])
		}
	}
	f := coldFile(t, diskDir(t), 1<<20)
	tr := traceCmd(t, "--force-mechanism", "*=kprobe", "--", "dd", "if="+f, "of=/dev/null", "bs=1", "count=1")
	calls := tr.forIno(inoOf(t, f))
	if len(calls) != 1 || calls[0].Cache.PagesMissed != 1 || sumBioBytes(calls) != calls[0].Cache.PagesAdded*4096 || calls[0].Syscall != "read" {
		t.Fatalf("kprobe read story: %+v", calls)
	}
	if tr.summary.Attach["vfs_read"] != "kprobe" {
		t.Errorf("summary attach: %v", tr.summary.Attach)
	}
}

// testdata/doctor-RELEASE.txt keeps `iopath doctor` for each kernel CI runs
// on; the output for the running kernel must match it when the file exists.
// IOPATH_UPDATE_GOLDEN=1 rewrites it (on the host; the VM's repo is read-only).
func TestDoctorGolden(t *testing.T) {
	needRoot(t)
	var u unix.Utsname
	unix.Uname(&u)
	release := unix.ByteSliceToString(u.Release[:])
	golden := filepath.Join("..", "..", "testdata", "doctor-"+release+".txt")
	stdout, _, code := runIopath(t, os.TempDir(), "doctor")
	if code != 0 {
		t.Fatalf("doctor exit %d", code)
	}
	if os.Getenv("IOPATH_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Skipf("no %s for this kernel (IOPATH_UPDATE_GOLDEN=1 writes it)", golden)
	}
	if !bytes.Equal(want, []byte(stdout)) {
		t.Errorf("doctor output differs from %s:\n--- got\n%s\n--- want\n%s", golden, stdout, want)
	}
	if !strings.Contains(stdout, "ready: every required hook attaches") {
		t.Errorf("doctor not ready:\n%s", stdout)
	}
}

// --force-mechanism '*=tracepoint' runs the classic-tracepoint programs
// (syscalls:sys_enter_read, filemap:…, readahead:…): the last fallback must
// give the same read and write stories.
func TestForcedTracepointStories(t *testing.T) {
	needRoot(t)
	r := doctorJSON(t, "--force-mechanism", "*=tracepoint")
	m := mechanisms(r)
	for _, h := range []string{"vfs_read", "vfs_write", "fsync", "page_cache_add"} {
		if m[h] != tracer.Tracepoint {
			t.Errorf("forced: %s uses %s, want tracepoint", h, m[h])
		}
	}
	dir := diskDir(t)
	f := coldFile(t, dir, 1<<20)
	tr := traceCmd(t, "--force-mechanism", "*=tracepoint", "--", "dd", "if="+f, "of=/dev/null", "bs=1", "count=1")
	calls := tr.forIno(inoOf(t, f))
	if len(calls) != 1 || calls[0].Cache.PagesMissed != 1 || sumBioBytes(calls) != calls[0].Cache.PagesAdded*4096 || calls[0].Syscall != "read" {
		t.Fatalf("tracepoint read story: %+v", calls)
	}
	w := filepath.Join(dir, "w")
	tr = traceCmd(t, "--force-mechanism", "*=tracepoint", "--", "dd", "if=/dev/zero", "of="+w, "bs=1", "count=1", "conv=fsync")
	var persisted bool
	for _, p := range tr.persisted {
		persisted = persisted || (p.Reason == "fsync" && p.Pages >= 1)
	}
	if !persisted {
		t.Errorf("tracepoint write story: no page persisted by fsync: %+v", tr.persisted)
	}
}

// Kernels before 6.2 have no bpf_rdonly_cast: raw_sys_enter then reads the
// struct file with bpf_probe_read_kernel (IOPATH_NO_KFUNCS=1 forces that
// build here). Both must give the same stories, path included.
func TestProbeReadSyscallEntry(t *testing.T) {
	needRoot(t)
	t.Setenv("IOPATH_NO_KFUNCS", "1")
	dir := diskDir(t)
	f := coldFile(t, dir, 1<<20)
	tr := traceCmd(t, "--", "dd", "if="+f, "of=/dev/null", "bs=4096", "count=2", "skip=3")
	calls := tr.forIno(inoOf(t, f))
	if len(calls) != 2 || calls[0].Path != f || calls[1].Path != f || calls[0].Offset != 3*4096 ||
		calls[0].Cache.PagesMissed != 1 || len(calls[0].Bios) == 0 {
		t.Fatalf("probe-read build, read story: %+v", calls)
	}
}
