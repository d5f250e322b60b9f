package tracer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/iopath/iopath/bpf"
	"golang.org/x/sys/unix"
)

// Page faults on file mappings (bpf/fault.c). A fault is bracketed by its
// start, handle_mm_fault (fentry or kprobe; the VMA is its argument) or
// else the x86 page_fault_user tracepoint (the file from the VMA with
// bpf_find_vma, 5.17+), and the perf software event page-faults-maj or
// page-faults-min (its end, after any retry: mm_account_fault, which also
// counts the task's maj_flt), or else the delivery of a signal (a fault
// that has no perf event: signal:signal_deliver). The start and the perf
// end are needed for fault records; the filemap tracepoints (6.11+) add
// retries and fault-around. Only user-mode
// faults are records on every mechanism (docs/hooks.md).
func faultHooks() []Hook {
	return []Hook{
		{Name: "fault_entry", Loses: "fault records (no handle_mm_fault(vma, address, flags, regs) hook, no page_fault_user tracepoint with bpf_find_vma)", candidates: []candidate{
			{mech: Fentry, attach: []attachment{shaped(bpf.IopathProgFentryHandleMmFault, akFentry, "handle_mm_fault", mmFaultShape)}},
			{mech: Kprobe, attach: []attachment{shaped(bpf.IopathProgKprobeHandleMmFault, akKprobe, "handle_mm_fault", mmFaultShape)}},
			// x86 fires page_fault_user with interrupts still off: no
			// preemption inside its program (candidate.unpreempted).
			{mech: TPBTF, unpreempted: true, needs: []asm.BuiltinFunc{asm.FnFindVma}, attach: []attachment{fn(bpf.IopathProgBtfPageFaultUser, akTPBTF, "page_fault_user")}},
			{mech: Tracepoint, needs: []asm.BuiltinFunc{asm.FnFindVma}, attach: []attachment{fn(bpf.IopathProgTpPageFaultUser, akTracepoint, "exceptions/page_fault_user")}},
		}},
		{Name: "fault_end", Loses: "fault records (no page-fault perf events)", candidates: []candidate{
			{mech: PerfEvent, attach: []attachment{fn(bpf.IopathProgPerfFaultMajor, akPerfEvent, perfFaultsMaj),
				fn(bpf.IopathProgPerfFaultMinor, akPerfEvent, perfFaultsMin)}},
		}},
		{Name: "fault_signal", Loses: "the end of faults that ended at a signal's delivery (no perf end event: a pass not redone for a pending signal, SIGBUS, SIGSEGV): such a fault is closed at the thread's next fault or exit (end_unseen, its signal unknown) or, found open by a system call, has no record; counted in faults_unended", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgBtfSignalDeliver, akTPBTF, "signal_deliver")}},
			{mech: Tracepoint, attach: []attachment{fn(bpf.IopathProgTpSignalDeliver, akTracepoint, "signal/signal_deliver")}},
		}},
		{Name: "msync", Loses: "msync calls", candidates: []candidate{vmaCalls(bpf.IopathOpSysSYS_MSYNC),
			vmaLookupCalls(bpf.IopathOpSysSYS_MSYNC)}},
		{Name: "advice", Loses: "madvise/fadvise64/readahead calls", candidates: []candidate{
			vmaCalls(bpf.IopathOpSysSYS_MADVISE, bpf.IopathOpSysSYS_FADVISE64, bpf.IopathOpSysSYS_READAHEAD),
			vmaLookupCalls(bpf.IopathOpSysSYS_MADVISE, bpf.IopathOpSysSYS_FADVISE64, bpf.IopathOpSysSYS_READAHEAD)}},
		{Name: "filemap_fault", Loses: "retried of fault records (filemap:mm_filemap_fault, 6.11+)", candidates: []candidate{
			{mech: Fentry, variant: "VM_FAULT_RETRY of each pass", attach: []attachment{fn(bpf.IopathProgFexitFilemapFault, akFexit, "filemap_fault")}},
			{mech: Kprobe, variant: "VM_FAULT_RETRY of each pass", attach: []attachment{fn(bpf.IopathProgKretprobeFilemapFault, akKretprobe, "filemap_fault")}},
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgBtfFilemapFault, akTPBTF, "mm_filemap_fault")}},
			{mech: Tracepoint, attach: []attachment{fn(bpf.IopathProgTpFilemapFault, akTracepoint, "filemap/mm_filemap_fault")}},
		}},
		{Name: "fault_around", Loses: "fault_around of fault records (filemap:mm_filemap_map_pages, 6.11+)", candidates: []candidate{
			{mech: TPBTF, attach: []attachment{fn(bpf.IopathProgBtfFilemapMapPages, akTPBTF, "mm_filemap_map_pages")}},
			{mech: Tracepoint, attach: []attachment{fn(bpf.IopathProgTpFilemapMapPages, akTracepoint, "filemap/mm_filemap_map_pages")}},
		}},
	}
}

// mmFaultShape is handle_mm_fault's 5.9+ prototype, where the fault's
// accounting (mm_account_fault: maj_flt and the perf end event) moved in.
const mmFaultShape = "vm_area_struct,*,*,pt_regs"

// Fault record fields each fault hook provides (FaultUnavailable).
var faultFieldsOf = map[string][]string{
	"filemap_fault": {"retried"},
	"fault_signal":  {"signal"},
	"fault_around":  {"fault_around"},
	"iowait":        {"blocked_ns"},
	"dirty_folio":   {"dirtied_pages"},
	"readahead":     {"cache.readahead (kernel windows)"},
}

// FaultUnavailable returns the fault record fields lost to hooks that got
// no mechanism; nil fields and false when faults are not traced at all.
func FaultUnavailable(st []HookStatus) (fields []string, traced bool) {
	traced = true
	for _, h := range st {
		if h.Mechanism != None {
			continue
		}
		if h.Hook == "fault_entry" || h.Hook == "fault_end" {
			traced = false
		}
		fields = append(fields, faultFieldsOf[h.Hook]...)
	}
	return fields, traced
}

// dropFaults removes the fault hooks from chosen when a fault cannot be
// bracketed (no start or no end): their programs would only cost time.
// IOPATH_NO_FAULTS=1 removes them anywhere (faults then are not records and
// their bios are unattributed, as before issue 14).
func dropFaults(chosen map[string]candidate, st []HookStatus) {
	if _, traced := FaultUnavailable(st); traced && os.Getenv("IOPATH_NO_FAULTS") == "" {
		return
	}
	for _, h := range faultHooks() {
		if h.Name == "msync" || h.Name == "advice" { // calls: traced without faults
			continue
		}
		delete(chosen, h.Name)
		for i := range st {
			if st[i].Hook == h.Name && st[i].Mechanism != None {
				st[i].Variant = "not attached: faults are not traced"
			}
		}
	}
}

// The perf software events that end a fault (attachment targets).
const (
	perfFaultsMaj = "page-faults-maj"
	perfFaultsMin = "page-faults-min"
)

func perfConfig(target string) (uint64, error) {
	switch target {
	case perfFaultsMaj:
		return unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ, nil
	case perfFaultsMin:
		return unix.PERF_COUNT_SW_PAGE_FAULTS_MIN, nil
	}
	return 0, fmt.Errorf("unknown perf event %s", target)
}

// openPerf opens the software event target on cpu for every task, one
// sample (one program run) per event.
func openPerf(target string, cpu int) (int, error) {
	cfg, err := perfConfig(target)
	if err != nil {
		return -1, err
	}
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: cfg, Sample: 1, Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{}))}
	return unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

// probePerf opens the event on CPU 0 (perf_event_paranoid, CONFIG_PERF_EVENTS)
// and checks that the kernel has perf_event programs.
func probePerf(target string) error {
	fd, err := openPerf(target, 0)
	if err != nil {
		return fmt.Errorf("perf event %s: %w", target, err)
	}
	defer unix.Close(fd)
	if err := features.HaveProgramType(ebpf.PerfEvent); err != nil {
		return fmt.Errorf("perf_event programs: %w", err)
	}
	return nil
}

// attachPerf runs prog on the event target of every possible CPU: by BPF
// link (5.15+), else by PERF_EVENT_IOC_SET_BPF on the event's fd (4.9+;
// 5.10 refuses the link with EINVAL), which then stays open as the link.
func attachPerf(target string, prog *ebpf.Program) ([]io.Closer, error) {
	var links []io.Closer
	n := runtime.NumCPU()
	if cpus, err := possibleCPUs(); err == nil {
		n = cpus
	}
	for cpu := 0; cpu < n; cpu++ {
		fd, err := openPerf(target, cpu)
		if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EINVAL) && cpu > 0 {
			continue // an offline CPU
		}
		if err != nil {
			closeAll(links)
			return nil, fmt.Errorf("perf event %s on CPU %d: %w", target, cpu, err)
		}
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err == nil {
			unix.Close(fd) // the link holds the event
			links = append(links, l)
			continue
		}
		if ierr := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); ierr != nil {
			unix.Close(fd)
			closeAll(links)
			return nil, fmt.Errorf("linking %s to perf event %s: %w (PERF_EVENT_IOC_SET_BPF: %w)", prog, target, err, ierr)
		}
		links = append(links, perfFD(fd))
	}
	return links, nil
}

// perfFD is a perf event with a program set by ioctl: closing it detaches.
type perfFD int

func (fd perfFD) Close() error { return unix.Close(int(fd)) }

func possibleCPUs() (int, error) { return ebpf.PossibleCPU() }

func closeAll(links []io.Closer) {
	for _, l := range links {
		l.Close()
	}
}

// addFaultStats folds the kernel's per-CPU counts of faults that were not
// streamed into the engine's summary.
func (t *Tracer) addFaultStats() {
	m := t.coll.Maps[bpf.IopathMapFaultStats]
	if m == nil {
		return
	}
	var k bpf.IopathFaultKey
	var per []bpf.IopathFaultStat
	it := m.Iterate()
	for it.Next(&k, &per) {
		var sum bpf.IopathFaultStat
		for _, v := range per {
			sum.Faults += v.Faults
			sum.WriteFaults += v.WriteFaults
			sum.AroundPages += v.AroundPages
			sum.FsMagic = max(sum.FsMagic, v.FsMagic)
			if sum.Comm[0] == 0 {
				sum.Comm = v.Comm
			}
			if sum.Name[0] == 0 {
				sum.Name = v.Name
			}
		}
		t.Engine.AddFaults(k, sum)
	}
}

// vmaCalls: calls through the raw_syscalls programs that may find their
// file from the VMA of an address (msync, madvise: bpf_find_vma).
func vmaCalls(sys ...bpf.IopathOpSys) candidate {
	c := rawSyscalls(sys...)
	c.needs = append(c.needs, asm.FnFindVma)
	return c
}

// vmaLookupCalls: the same calls where the kernel has no bpf_find_vma
// (before 5.17): msync and madvise take their file from the kernel's own
// lookup of their address, find_vma's (and find_vma_prev's) return by
// fexit (map_call_vma in bpf/fault.c); fadvise64 and readahead name an fd.
func vmaLookupCalls(sys ...bpf.IopathOpSys) candidate {
	c := rawSyscalls(sys...)
	c.mech = Fentry
	c.variant += "; msync/madvise find their file at find_vma's return (no bpf_find_vma)"
	c.attach = append(c.attach, fn(bpf.IopathProgFexitFindVma, akFexit, "find_vma"),
		fn(bpf.IopathProgFexitFindVmaPrev, akFexit, "find_vma_prev"))
	return c
}

// mapCallHooked says whether a chosen msync/advice candidate finds the file
// at find_vma's return (the BPF side's map_call_hooked).
func mapCallHooked(chosen map[string]candidate) bool {
	for _, h := range []string{"msync", "advice"} {
		for _, a := range chosen[h].attach {
			if a.prog == bpf.IopathProgFexitFindVma {
				return true
			}
		}
	}
	return false
}
