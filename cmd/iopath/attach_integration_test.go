package main

// Which mechanism each hook gets, on this kernel and on the VM kernels
// (scripts/vmtest.sh sets IOPATH_VM_KERNEL), and that every mechanism gives
// the same read story.

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/iopath/iopath/tracer"
	"golang.org/x/sys/unix"
)

// functionHooks are the design's function hooks, which have fentry and
// kprobe candidates; readahead has fexit only.
var functionHooks = []string{"vfs_read", "vfs_write", "filemap_get_pages", "do_writepages", "balance_dirty_pages"}

func doctorJSON(t *testing.T, args ...string) *tracer.DoctorReport {
	t.Helper()
	stdout, stderr, code := runIopath(t, os.TempDir(), append([]string{"doctor", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("doctor: exit %d, %s", code, stderr)
	}
	var r tracer.DoctorReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, stdout)
	}
	return &r
}

func mechanisms(r *tracer.DoctorReport) map[string]tracer.Mechanism {
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

// vmMechanisms are the hooks that do not get the VM default (fentry for the
// function hooks) on a Debian kernel series, and what they get instead
// (testdata/doctor-<series>.txt has the full table and the reasons).
var vmMechanisms = map[string]map[string]tracer.Mechanism{
	// 5.10: no bpf_get_current_task_btf/bpf_task_pt_regs (syscall_from_regs)
	// for fentry/kprobe on vfs_read/vfs_write; no filemap_get_pages (5.12);
	// mm_filemap_add_to_page_cache passes a struct page (classic tracepoint);
	// writeback_dirty_page instead of writeback_dirty_folio.
	"5.10": {"vfs_read": tracer.TPBTF, "vfs_write": tracer.TPBTF, "filemap_get_pages": tracer.None,
		"page_cache_add": tracer.Tracepoint, "dirty_folio": tracer.TPBTF},
}

// series returns "major.minor" of a kernel release ("6.1.0-57-amd64" -> "6.1").
func series(release string) string {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return release
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	return parts[0] + "." + minor
}

// On a Debian VM kernel the function hooks use fentry (readahead fexit),
// except where vmMechanisms says otherwise; on the build machine (no
// kprobes, fentry EPERM) their stand-ins.
func TestAttachMechanismPerKernel(t *testing.T) {
	needRoot(t)
	r := doctorJSON(t)
	m := mechanisms(r)
	if !r.RequiredOK {
		t.Fatalf("required hooks missing: %v", r.Problems)
	}
	inVM := os.Getenv("IOPATH_VM_KERNEL") != ""
	except := maps.Clone(vmMechanisms[series(r.Kernel)])
	if preemptsPrograms(r) {
		// Read and write calls are hooked at raw_syscalls there, whose
		// programs have spares (tracer/hooks.go, unpreempted).
		if except == nil {
			except = map[string]tracer.Mechanism{}
		}
		except["vfs_read"], except["vfs_write"] = tracer.TPBTF, tracer.TPBTF
	}
	if inVM {
		for h, want := range except {
			if m[h] != want {
				t.Errorf("%s: %s on %s, want %s", h, m[h], r.Kernel, want)
			}
		}
	}
	for _, h := range append(functionHooks, "readahead") {
		if _, ok := except[h]; ok && inVM {
			continue
		}
		switch {
		case inVM && m[h] != tracer.Fentry:
			t.Errorf("%s: %s on %s, want fentry", h, m[h], r.Kernel)
		case !inVM && h != "readahead" && !kprobesHere() && m[h] != tracer.TPBTF && m[h] != tracer.Tracepoint:
			t.Errorf("%s: %s here, want a tracepoint stand-in", h, m[h])
		}
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
	for _, h := range r.Hooks {
		if !slices.Contains(functionHooks, h.Hook) || h.Mechanism == tracer.Kprobe {
			continue
		}
		// Where the kernel lacks the function or a helper the kprobe
		// program calls (5.10), doctor says so and the hook falls back.
		if want := vmMechanisms[series(r.Kernel)][h.Hook]; want != "" && h.Mechanism == want && kprobeRefused(h) {
			t.Logf("forced: %s uses %s on %s: %v", h.Hook, h.Mechanism, r.Kernel, h.Rejected)
			continue
		}
		t.Errorf("forced: %s uses %s, want kprobe (refused: %v)", h.Hook, h.Mechanism, h.Rejected)
	}
	f := coldFile(t, diskDir(t), 1<<20)
	tr := traceCmd(t, "--force-mechanism", "*=kprobe", "--", "dd", "if="+f, "of=/dev/null", "bs=1", "count=1")
	calls := tr.forIno(inoOf(t, f))
	if len(calls) != 1 || calls[0].Cache.PagesMissed != 1 || sumBioBytes(calls) != calls[0].Cache.PagesAdded*4096 || calls[0].Syscall != "read" {
		t.Fatalf("kprobe read story: %+v", calls)
	}
	if tr.summary.Attach["vfs_read"] != string(m["vfs_read"]) {
		t.Errorf("summary attach: %v, doctor: %v", tr.summary.Attach, m)
	}
}

// preemptsPrograms says whether doctor found a preemption model that
// preempts tracing programs (7.2's lazy): the unpreempted stand-ins come
// first there (tracer/probe.go).
func preemptsPrograms(r *tracer.DoctorReport) bool {
	return r.Preempt == "full" || r.Preempt == "lazy" || r.Preempt == "rt"
}

func kprobeRefused(h tracer.HookStatus) bool {
	for _, r := range h.Rejected {
		if strings.HasPrefix(r, "kprobe: ") {
			return true
		}
	}
	return false
}

// testdata/doctor-SERIES.txt (SERIES: major.minor, e.g. 6.1) keeps `iopath
// doctor` for each kernel series CI runs on; the output for the running
// kernel must match it when the file exists, except for the exact release in
// the kernel line (sid and the host kernel move within a series).
// IOPATH_UPDATE_GOLDEN=1 rewrites it (on the host; the VM's repo is
// read-only: scripts/update-doctor-golden.sh).
func TestDoctorGolden(t *testing.T) {
	needRoot(t)
	var u unix.Utsname
	unix.Uname(&u)
	release := unix.ByteSliceToString(u.Release[:])
	golden := filepath.Join("..", "..", "testdata", "doctor-"+series(release)+".txt")
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
		if os.Getenv("IOPATH_VM_KERNEL") != "" {
			t.Fatalf("no %s for this VM kernel: scripts/update-doctor-golden.sh writes it", golden)
		}
		t.Skipf("no %s for this kernel (IOPATH_UPDATE_GOLDEN=1 writes it)", golden)
	}
	if got, w := maskRelease(stdout), maskRelease(string(want)); got != w {
		t.Errorf("doctor output differs from %s:\n--- got\n%s\n--- want\n%s", golden, stdout, want)
	}
	if !strings.Contains(stdout, "ready: every required hook attaches") {
		t.Errorf("doctor not ready:\n%s", stdout)
	}
}

// maskRelease replaces the release in doctor's "kernel:" line by its series.
func maskRelease(doctor string) string {
	first, rest, _ := strings.Cut(doctor, "\n")
	if f := strings.Fields(first); len(f) >= 3 && f[0] == "kernel:" {
		first = strings.Replace(first, f[2], series(f[2])+".*", 1)
	}
	return first + "\n" + rest
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
	// Without the kfunc (before 6.2) the probe-read build is the default
	// one, which every other trace test runs: nothing more to check here.
	var fn *btf.Func
	if spec, err := btf.LoadKernelSpec(); err == nil && spec.TypeByName("bpf_rdonly_cast", &fn) != nil {
		t.Skip("no bpf_rdonly_cast on this kernel: every trace test runs the probe-read build already")
	}
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
