package tracer

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/iopath/iopath/bpf"
	"golang.org/x/sys/unix"
)

// Spare system-call programs (bpf/syscalls.c, "Spare programs"). Where the
// kernel runs system-call tracepoint programs preemptibly (Debian's 7.2,
// PREEMPT_LAZY), a thread preempted inside raw_sys_exit makes the kernel
// skip that program for every other thread's system call on that CPU until
// it runs again: a call without its record, an io_submit without its
// iocbs. The spares are the same bodies as other programs, attached after
// the primaries once the kernel has skipped a primary's run; they act only
// for an event whose primary run was skipped. No kernel version or config
// says whether the programs run preemptibly (7.2 removed the
// preempt_disable 6.14 put around them): the skipped runs themselves do.
//
// When: at start where the kernel's preemption model lets a thread be
// preempted in kernel code (full, lazy, rt: preemptModel), else at the first
// skipped run (a 200 ms poll of the primaries' recursion_misses; the runs
// skipped before stay lost and are reported in missed_runs). Until then
// nothing is spent on them: they are not even loaded (~0.8 s of verifier
// CPU for the six: raw_sys_exit's spare alone verifies ~350 k instructions;
// `trace -- true` took 1.0 s of system time without them, 1.9 s with, a
// reviewer's measurement, 2026-12-07), and the primaries count their runs
// only from spares_on. Attached, they cost a traced system call two more
// program runs and four LRU lookups (docs/hooks.md). IOPATH_SPARES=now attaches them at start anyway, =off never.
// Measured in the 1-vCPU 7.2 VM (2026-12-07), TestTraceWorkloadJobProcesses
// (2 libaio job processes, 1000 O_DIRECT reads): attached at the first
// skip, they came too late for its 2 s (46-133 bios never seen issued, 3
// runs); attached at start, 0, with spare_rq_issue 56, spare_bio_queue 5,
// spare_sys_exit 25, spare_sys_enter 10.

// SpareHook names the spares' line in the attach report (summary and doctor).
const SpareHook = "spares"

// spareEvery is how often Run's watcher reads the primaries' skipped runs.
const spareEvery = 200 * time.Millisecond

// spareOf is a program with spare copies: the primary, its spares in the
// order they attach (bpf/spare.h: SPARE, then SPARE2), the counter of the
// spares' runs in the primary's place, and the event.
type spareOf struct {
	primary string
	spares  []string
	counter bpf.IopathCounter
	event   string
}

// spared lists them (bpf/spare.h, enum spared): the programs 7.2 was seen to
// skip for traced threads' events. Those seen lost with one spare held too
// (several io-wq workers on one CPU) have two; the system-call pair has
// one (its exit program alone verifies ~350 k instructions).
var spared = []spareOf{
	{bpf.IopathProgRawSysEnter, []string{bpf.IopathProgRawSysEnterSpare}, bpf.IopathCounterCNT_SPARE_SYS_ENTER, "sys_enter"},
	{bpf.IopathProgRawSysExit, []string{bpf.IopathProgRawSysExitSpare}, bpf.IopathCounterCNT_SPARE_SYS_EXIT, "sys_exit"},
	{bpf.IopathProgTpBlockBioQueue, []string{bpf.IopathProgTpBlockBioQueueSpare, bpf.IopathProgTpBlockBioQueueSpare2}, bpf.IopathCounterCNT_SPARE_BIO_QUEUE, "block_bio_queue"},
	{bpf.IopathProgTpBlockRqIssue, []string{bpf.IopathProgTpBlockRqIssueSpare, bpf.IopathProgTpBlockRqIssueSpare2}, bpf.IopathCounterCNT_SPARE_RQ_ISSUE, "block_rq_issue"},
	{bpf.IopathProgAioDioBegin, []string{bpf.IopathProgAioDioBeginSpare, bpf.IopathProgAioDioBeginSpare2}, bpf.IopathCounterCNT_SPARE_AIO_DIO, "iomap_dio_rw_begin"},
	{bpf.IopathProgUringDioBegin, []string{bpf.IopathProgUringDioBeginSpare, bpf.IopathProgUringDioBeginSpare2}, bpf.IopathCounterCNT_SPARE_URING_DIO, "iomap_dio_rw_begin"},
	{bpf.IopathProgUringFileGet, []string{bpf.IopathProgUringFileGetSpare, bpf.IopathProgUringFileGetSpare2}, bpf.IopathCounterCNT_SPARE_URING_FILE, "io_uring_file_get"},
	{bpf.IopathProgTpFlushIssue, []string{bpf.IopathProgTpFlushIssueSpare, bpf.IopathProgTpFlushIssueSpare2}, bpf.IopathCounterCNT_SPARE_FLUSH_ISSUE, "block_rq_issue"},
}

type spareSet struct {
	// spec holds the spare programs, taken out of the load: each costs
	// as much verifier time as its primary (all six: ~0.8 s of CPU at start-up
	// here), spent only when the kernel has skipped a run.
	spec     *ebpf.CollectionSpec
	cache    *btf.Cache
	loaded   []spareOf  // pairs whose primary is loaded (and spare not yet)
	mu       sync.Mutex // attaching against Close
	attached bool
	// reported is the highest lost count reported per primary: a
	// primary's skip is counted before its spare counts its takeover, so
	// a read in between is higher than the next; iopath_missed_runs_total
	// must not go down.
	reported map[string]uint64
}

// takeSpares moves the spare programs out of spec into t.spares.spec; the
// ones named in noop (tests: a copy whose every run is skipped) do nothing.
func (t *Tracer) takeSpares(spec *ebpf.CollectionSpec, cache *btf.Cache, noop []string) {
	t.spares.spec = &ebpf.CollectionSpec{Maps: spec.Maps, Programs: map[string]*ebpf.ProgramSpec{}, ByteOrder: spec.ByteOrder}
	t.spares.cache = cache
	for _, s := range spared {
		for _, name := range s.spares {
			if p := spec.Programs[name]; p != nil {
				if slices.Contains(noop, name) {
					p = p.Copy()
					p.Instructions = asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
				}
				t.spares.spec.Programs[name] = p
				delete(spec.Programs, name)
			}
		}
	}
}

// spareable lists the programs whose primary is loaded in coll, each with
// the spares that can be loaded (the system-call spares are BTF builds only).
func (t *Tracer) spareable() []spareOf {
	var out []spareOf
	for _, s := range spared {
		if t.coll.Programs[s.primary] == nil || t.spares.spec == nil {
			continue
		}
		var have []string
		for _, name := range s.spares {
			if t.spares.spec.Programs[name] == nil {
				break // a second spare only after the first
			}
			have = append(have, name)
		}
		if len(have) > 0 {
			s.spares = have
			out = append(out, s)
		}
	}
	return out
}

// watchSpares polls the primaries' skipped runs every spareEvery until
// stop is closed, and attaches the spares at the first. notes gets one line
// when they attach.
func (t *Tracer) watchSpares(stop <-chan struct{}, notes io.Writer) {
	if len(t.spares.loaded) == 0 || !countsMisses() {
		return
	}
	tick := time.NewTicker(spareEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		skipped, which := t.primarySkips()
		if skipped == 0 {
			continue
		}
		if err := t.attachSpares(fmt.Sprintf("after the kernel skipped %d runs of %s", skipped, which)); err != nil {
			if notes != nil {
				fmt.Fprintf(notes, "iopath: the kernel skipped %d runs of %s and the spare programs did not attach: %v (what those runs would have seen is lost, counted in missed_runs)\n", skipped, which, err)
			}
			return
		}
		if notes != nil {
			fmt.Fprintf(notes, "iopath: the kernel skipped %d runs of %s (a thread preempted inside a program holds it on its CPU): spare programs attached (attach: %s)\n", skipped, which, SpareHook)
		}
		return
	}
}

// primarySkips sums the runs of the spared primaries the kernel skipped
// so far, and names the programs.
func (t *Tracer) primarySkips() (uint64, string) {
	var n uint64
	var names []string
	for _, s := range t.spares.loaded {
		if st, err := t.coll.Programs[s.primary].Stats(); err == nil && st.RecursionMisses > 0 {
			n += st.RecursionMisses
			names = append(names, s.primary)
		}
	}
	return n, strings.Join(names, ", ")
}

// attachSpares loads the spares, turns the primaries' counting on, then
// attaches the spares (in that order: a spare's first run then finds the
// primary's count of the same event, never a count that started after it).
// The loading (seconds of verifier time under load: raw_sys_exit's body is
// ~350 k verified instructions) runs outside the lock, so ProgramMisses
// (top's intervals, serve's scrapes) and Close do not wait for it.
func (t *Tracer) attachSpares(why string) error {
	t.spares.mu.Lock()
	coll, done := t.coll, t.spares.attached
	t.spares.mu.Unlock()
	if done || coll == nil {
		return nil
	}
	progs := map[string]*ebpf.Program{}
	closeAll := func() {
		for _, p := range progs {
			p.Close()
		}
	}
	for _, s := range t.spares.loaded {
		for _, name := range s.spares {
			p, err := loadProgram(t.spares.spec, name, coll.Maps, t.spares.cache) // load.go
			if err != nil {
				closeAll()
				return fmt.Errorf("loading %s: %w", name, err)
			}
			progs[name] = p
		}
	}
	t.spares.mu.Lock()
	defer t.spares.mu.Unlock()
	if t.spares.attached || t.coll == nil { // closed meanwhile
		closeAll()
		return nil
	}
	for name, p := range progs {
		t.coll.Programs[name] = p // closed with the others
	}
	if err := t.coll.Variables[bpf.IopathVarSparesOn].Set(uint32(1)); err != nil {
		return fmt.Errorf("setting spares_on: %w", err)
	}
	var targets []string
	for copy := range 2 { // every first spare, then every second: each after the copies before it
		for _, s := range t.spares.loaded {
			if copy >= len(s.spares) {
				continue
			}
			l, err := attachOne(attachment{kind: akTPBTF}, t.coll.Programs[s.spares[copy]])
			if err != nil {
				return fmt.Errorf("%s: %w", s.spares[copy], err)
			}
			t.links = append(t.links, l)
			targets = append(targets, s.event)
		}
	}
	t.spares.attached = true
	t.Hooks = append(t.Hooks, HookStatus{Hook: SpareHook, Mechanism: TPBTF, Targets: targets,
		Variant: "attached " + why})
	return nil
}

// adjustForSpares turns per-program skipped runs into lost ones: a
// primary's skips less the runs its spare did in its place, never less
// than reported before; the spares' own skips are left out (a spare
// skipped while its primary ran lost nothing; one skipped with its primary
// is among the primary's skips). Called with t.spares.mu held.
func (t *Tracer) adjustForSpares(misses map[string]uint64) {
	c := t.Counters()
	if t.spares.reported == nil {
		t.spares.reported = map[string]uint64{}
	}
	for _, s := range spared {
		for _, name := range s.spares {
			delete(misses, name)
		}
		n, ok := misses[s.primary]
		if !ok || !t.spares.attached {
			continue
		}
		lost := lostRuns(n, c[counterNames[s.counter]], t.spares.reported[s.primary])
		t.spares.reported[s.primary] = lost
		misses[s.primary] = lost
	}
}

// sparesAtStart attaches the spares in New where the kernel preempts kernel
// code (or IOPATH_SPARES=now); IOPATH_SPARES=off keeps them out entirely.
func (t *Tracer) sparesAtStart() error {
	switch os.Getenv(SparesEnv) {
	case "off":
		t.spares.loaded = nil
		return nil
	case "now":
		return t.attachSpares("at start (IOPATH_SPARES=now)")
	}
	model, source := preemptModel()
	if !preempts(model) || len(t.spares.loaded) == 0 {
		return nil
	}
	return t.attachSpares(fmt.Sprintf("at start: the kernel's preemption model is %s (%s)", model, source))
}

// sparesWhen says when the spare programs attach on a kernel with
// preemption model model (sparesAtStart, watchSpares), for doctor.
func sparesWhen(model string) string {
	switch os.Getenv(SparesEnv) {
	case "off":
		return "never attach (IOPATH_SPARES=off)"
	case "now":
		return "attach at start (IOPATH_SPARES=now)"
	}
	switch {
	case preempts(model):
		return "attach at start (a thread can be preempted inside a tracing program, and the kernel then skips the program's runs on that CPU)"
	case !countsMisses():
		return "never attach (the kernel does not count skipped runs: bpf_prog_info has no recursion_misses before 5.12)"
	}
	return "attach at the first run of a spared program the kernel skips"
}

// SparesEnv is the environment variable that overrides when the spares
// attach: now (at start), off (never).
const SparesEnv = "IOPATH_SPARES"

// checkSparesEnv refuses an IOPATH_SPARES value other than now, off or
// empty (a typo would otherwise be the default, silently).
func checkSparesEnv() error {
	switch v := os.Getenv(SparesEnv); v {
	case "", "now", "off":
		return nil
	default:
		return fmt.Errorf("%s=%q is not a choice: give now (attach the spare programs at start), off (never), or leave it unset (at start where the kernel preempts kernel code, else at the first skipped run)", SparesEnv, v)
	}
}

// preempts says whether a preemption model lets the scheduler preempt a
// thread in kernel code (inside a tracing program's run).
func preempts(model string) bool {
	return model == "full" || model == "lazy" || model == "rt"
}

// preemptModel returns the running kernel's preemption model (none,
// voluntary, full, lazy, rt) and where it was read, or "" when nothing
// says: the current mode of a PREEMPT_DYNAMIC kernel in debugfs
// (sched/preempt marks it in parentheses), else a preempt= boot parameter,
// else the kernel's configuration (/proc/config.gz, /boot/config-RELEASE).
// Read once per process: the prober and the spares' start both ask, and
// the configuration is a gzip of ~100 KB (/proc/config.gz).
var preemptModel = sync.OnceValues(readPreemptModel)

func readPreemptModel() (model, source string) {
	const dyn = "/sys/kernel/debug/sched/preempt"
	if b, err := os.ReadFile(dyn); err == nil {
		if m := dynamicModel(string(b)); m != "" {
			return m, dyn
		}
	}
	cfg, source := kernelConfig()
	// preempt= picks the mode of a PREEMPT_DYNAMIC kernel only; others
	// ignore it (a config not found: taken as said).
	if b, err := os.ReadFile("/proc/cmdline"); err == nil && (cfg == nil || cfg["CONFIG_PREEMPT_DYNAMIC"] == "y") {
		for _, f := range strings.Fields(string(b)) {
			if m, ok := strings.CutPrefix(f, "preempt="); ok {
				return m, "/proc/cmdline"
			}
		}
	}
	if m := configModel(cfg); m != "" {
		return m, source
	}
	return "", ""
}

// dynamicModel reads debugfs sched/preempt ("none voluntary full (lazy)"):
// the mode in parentheses.
func dynamicModel(text string) string {
	_, after, ok := strings.Cut(text, "(")
	if !ok {
		return ""
	}
	m, _, _ := strings.Cut(after, ")")
	return m
}

// configModel is the model a kernel configuration builds (the default mode
// of a PREEMPT_DYNAMIC one).
func configModel(cfg map[string]string) string {
	for _, c := range []struct{ option, model string }{
		{"CONFIG_PREEMPT_RT", "rt"}, {"CONFIG_PREEMPT_LAZY", "lazy"}, {"CONFIG_PREEMPT", "full"},
		{"CONFIG_PREEMPT_VOLUNTARY", "voluntary"}, {"CONFIG_PREEMPT_NONE", "none"},
	} {
		if cfg[c.option] == "y" {
			return c.model
		}
	}
	return ""
}

// kernelConfig reads the running kernel's build configuration, as options
// set (name → value), and says from where.
func kernelConfig() (map[string]string, string) {
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	release := unix.ByteSliceToString(uts.Release[:])
	for _, p := range []string{"/proc/config.gz", "/boot/config-" + release} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		defer f.Close()
		var r io.Reader = f
		if strings.HasSuffix(p, ".gz") {
			z, err := gzip.NewReader(f)
			if err != nil {
				continue
			}
			r = z
		}
		out := map[string]string{}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(k, "CONFIG_") {
				out[k] = v
			}
		}
		return out, p
	}
	return nil, ""
}

// lostRuns is what a primary's skipped runs lost: skipped less those its
// spare took over, never below what was reported before (prev).
func lostRuns(skipped, tookOver, prev uint64) uint64 {
	return max(skipped-min(skipped, tookOver), prev)
}
