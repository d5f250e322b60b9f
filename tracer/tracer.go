package tracer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"github.com/iopath/iopath/bpf"
	"github.com/iopath/iopath/record"
	"github.com/iopath/iopath/tracer/engine"
	"github.com/iopath/iopath/tracer/kernel"
	"golang.org/x/sys/unix"
)

// Options configure a Tracer.
type Options struct {
	Pids []int  // processes to trace (all their threads; children too)
	Comm string // trace tasks with this comm (at most 15 bytes)
	// All streams every call; by default pure cache hits are only counted
	// in the kernel and appear in the summary.
	All bool
	// RingBufBytes is the ring buffer size (power of two, ≥ 4096); default 8 MiB.
	RingBufBytes int
	// MaxDirtyPages bounds the dirty-page map (entries = folios); default 262144.
	MaxDirtyPages int
	// Force maps a hook name, or "*" for all, to a preferred mechanism.
	Force map[string]Mechanism
	// NoWriteback disables dirty-page tracking (the write story's join).
	NoWriteback bool
	// Agg keeps the in-kernel aggregates (bpf/agg.h, AggMaps); AggOnly
	// also stops every per-call and per-request record (top, serve).
	Agg, AggOnly bool
	// AllProcesses traces every process but iopath (top and serve without
	// -p or --comm).
	AllProcesses bool

	// Stop, when closed (a signal came), stops loading programs: New then
	// returns ErrStopped with nothing loaded. nil: never.
	Stop <-chan struct{}

	rejectProgs []string // tests: programs replaced by one the verifier refuses
	noopProgs   []string // tests: programs replaced by one that does nothing (a primary whose every run is skipped)
}

// Tracer owns the loaded BPF objects, their links and the ring buffer.
type Tracer struct {
	K      *kernel.Kernel
	Hooks  []HookStatus
	spares spareSet // spare.go
	Engine *engine.Engine
	// Compat, when set, says why the compat BPF build was loaded (compat.go).
	Compat []string
	// Idle, if set, is called by Run (on its goroutine) each time it has
	// consumed every record in the ring buffer, before it waits: the moment
	// to flush buffered output. It returns when it wants to be called again
	// if no record comes before (zero: whenever; Run waits at most 100 ms).
	Idle func() time.Time
	// Notes, if set, gets iopath's lines about the run (stderr): the spare
	// programs attaching (spare.go).
	Notes io.Writer

	coll       *ebpf.Collection
	targets    *ebpf.Map
	targetsGen uint32 // last value written to the BPF targets_gen
	events     *ebpf.Map
	counter    *ebpf.Map
	hits       *ebpf.Map
	links      []io.Closer
	rd         *ringbuf.Reader
	rw         *ringWait // nil: Run waits in rd
	opts       Options
	started    time.Time
	out        func(any)
	dec        Decoder
	dirtied    dirtiedFiles // files traced calls dirtied (DirtyLeft)
}

// Error kinds callers can test with errors.Is to choose a message.
var (
	ErrNotRoot  = errors.New("tracing needs root (CAP_BPF and CAP_PERFMON): run iopath with sudo")
	ErrNoBTF    = errors.New("the kernel exposes no BTF (/sys/kernel/btf/vmlinux missing): iopath needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distro kernels since 5.x)")
	ErrRequired = errors.New("a required hook could not be attached")
	// ErrUnsupported: what was asked for cannot run on this kernel.
	ErrUnsupported = errors.New("not supported on this kernel")
)

// Preflight checks privileges and BTF, the two causes of most failures.
func Preflight() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return ErrNoBTF
	}
	return nil
}

// Probe chooses a mechanism for every hook without loading iopath's programs.
func Probe(force map[string]Mechanism) ([]HookStatus, error) {
	if err := Preflight(); err != nil {
		return nil, err
	}
	if err := checkEnv(); err != nil {
		return nil, err
	}
	_ = rlimit.RemoveMemlock()
	pr, err := newProber(btf.NewCache())
	if err != nil {
		return nil, err
	}
	pr.disk.forget() // the diagnosis probes afresh (and refreshes the cache)
	st, _ := pr.choose(Hooks(), force)
	return st, nil
}

// CommLength refuses a --comm longer than the kernel's 15-byte task name
// (TASK_COMM_LEN 16 with its NUL): a longer name is cut, so none matches.
func CommLength(comm string) error {
	if len(comm) > 15 {
		return fmt.Errorf("--comm %q is longer than the kernel's 15-byte task name, which cuts longer names: give its first 15 bytes, --comm %q", comm, comm[:15])
	}
	return nil
}

// New probes the kernel, loads the chosen programs and attaches them. out
// receives records (*record.Syscall, *record.Writeback, *record.Persisted) from Run. On error
// nothing stays loaded or attached.
func New(opts Options, out func(any)) (t *Tracer, err error) {
	if err := Preflight(); err != nil {
		return nil, err
	}
	if err := checkEnv(); err != nil {
		return nil, err
	}
	// Options no kernel can serve are refused before any hook is chosen:
	// an error while loading blames the probe cache, and drops it.
	if err := CommLength(opts.Comm); err != nil {
		return nil, err
	}
	ph := newPhases() // load.go: IOPATH_LOAD_TIMES
	defer ph.done("ring buffer and engine")
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising RLIMIT_MEMLOCK: %w", err)
	}
	specc := readSpec() // load.go: parsed while the kernel's BTF is
	cache := btf.NewCache()
	kspec, err := cache.Kernel()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoBTF, err)
	}
	ph.done("kernel BTF")
	k, err := kernel.FromBTF(kspec)
	if err != nil {
		return nil, err
	}
	t = &Tracer{K: k, opts: opts, out: out, started: time.Now()}
	defer func() {
		if err != nil {
			t.Close()
			t = nil
		}
	}()
	pr, err := newProber(cache)
	if err != nil {
		return nil, err
	}
	statuses, chosen := pr.choose(Hooks(), opts.Force)
	ph.done("probing hooks")
	if !opts.All {
		// Page lookups cost ~15% of the BPF time of a cached read and only
		// feed cache.lookups: attached with --all.
		delete(chosen, "filemap_get_pages")
		for i := range statuses {
			if statuses[i].Hook == "filemap_get_pages" && statuses[i].Mechanism != None {
				statuses[i].Variant = "attached with --all only"
			}
		}
	}
	dropFaults(chosen, statuses)
	if opts.AggOnly {
		dropFaultsAggOnly(chosen, statuses) // agg.go
	}
	t.Hooks = statuses
	for _, h := range Hooks() {
		if h.Loses == "" {
			if _, ok := chosen[h.Name]; !ok {
				return nil, pr.disk.suspect(fmt.Errorf("%w: %s (%s); run `iopath doctor` for details", ErrRequired, h.Name, strings.Join(rejections(statuses, h.Name), "; ")))
			}
		}
	}
	sr := <-specc
	spec, compat, err := sr.spec, sr.compat, sr.err
	if err != nil {
		return nil, fmt.Errorf("reading embedded BPF object: %w", err)
	}
	t.Compat = compat
	ph.done("reading the BPF object")
	if !hasKfunc(kspec, "bpf_rdonly_cast") || os.Getenv("IOPATH_NO_KFUNCS") != "" {
		// Before 6.2 the struct file of a call is read with one
		// bpf_probe_read_kernel per field, at entry and (for streamed
		// calls) at exit: same records, ~80 and ~150 ns slower.
		// IOPATH_NO_KFUNCS=1 picks this variant anywhere (tests).
		spec.Programs[bpf.IopathProgRawSysEnter] = spec.Programs[bpf.IopathProgRawSysEnterProbe]
		spec.Programs[bpf.IopathProgRawSysExit] = spec.Programs[bpf.IopathProgRawSysExitProbe]
		// Their spares are BTF builds only (spare.go).
		delete(spec.Programs, bpf.IopathProgRawSysEnterSpare)
		delete(spec.Programs, bpf.IopathProgRawSysExitSpare)
	}
	t.takeSpares(spec, cache, opts.noopProgs) // spare.go: loaded when needed
	for {
		t.coll, err = loadChosen(spec, chosen, opts, cache)
		var pe *progErrors
		if err == nil || !errors.As(err, &pe) || !dropRejected(chosen, statuses, pe) {
			break
		}
		// An optional hook whose program this kernel's verifier refused
		// (the probe checks BTF and test-attaches stand-ins, not iopath's programs): the
		// hook is none, said with the verifier's reason, and the rest
		// loads again, as any other unavailable hook.
	}
	if errors.Is(err, ErrStopped) {
		return nil, err
	}
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			// Named, so that a report says which program (and the full
			// log of that one: IOPATH_VERIFIER_LOG).
			var pe *progErrors
			which := "a program"
			if errors.As(err, &pe) {
				which = "program " + pe.first
			}
			return nil, pr.disk.suspect(fmt.Errorf("the kernel's verifier rejected %s: %s (full log: IOPATH_VERBOSE=1)", which, verifierSummary(ve)))
		}
		return nil, pr.disk.suspect(fmt.Errorf("loading BPF programs: %w", err))
	}
	ph.done("loading maps and programs")
	t.spares.loaded = t.spareable() // spare.go
	t.targets = t.coll.Maps[bpf.IopathMapTargets]
	t.events = t.coll.Maps[bpf.IopathMapEvents]
	t.counter = t.coll.Maps[bpf.IopathMapCounters]
	t.hits = t.coll.Maps[bpf.IopathMapHitStats]
	for _, pid := range opts.Pids {
		// A pid checked before loading may have exited (and been reaped)
		// while the programs loaded: it is left out here, and the session
		// says so once the hooks are attached (session.exitedBefore),
		// tracing the others.
		if err := t.AddPid(pid); err != nil && !errors.Is(err, ErrNoProcess) {
			return nil, err
		}
	}
	progs := t.coll.Programs
	attached := map[attachment]bool{} // raw_syscalls programs serve several hooks
	for _, h := range Hooks() {
		c, ok := chosen[h.Name]
		if !ok {
			continue
		}
		for _, a := range c.attach {
			if attached[a] {
				continue
			}
			attached[a] = true
			ls, err := attach(a, progs[a.prog])
			if err != nil {
				return nil, attachError(pr.disk, h.Name, c.mech, a.target, err)
			}
			t.links = append(t.links, ls...)
		}
	}
	if err := t.sparesAtStart(); err != nil { // spare.go
		return nil, fmt.Errorf("attaching the spare programs: %w (IOPATH_SPARES=off traces without them; skipped runs are then counted in missed_runs)", err)
	}
	ph.done("attaching")
	rd, err := ringbuf.NewReader(t.events)
	if err != nil {
		return nil, fmt.Errorf("opening ring buffer: %w", err)
	}
	t.rd = rd
	if os.Getenv("IOPATH_RING_EPOLL") == "" { // IOPATH_RING_EPOLL=1: the reader's own wait (for comparison)
		t.rw = newRingWait(t.events)
	}
	t.Engine = engine.New(k, t.dirtied.watch(out))
	t.Engine.SetCompat(len(t.Compat) > 0)
	t.dirtied.gen = t.Engine.Generation
	t.Engine.Unavailable = Unavailable(statuses)
	t.Engine.AllCalls = opts.All
	t.Engine.FaultUnavailable, _ = FaultUnavailable(statuses)
	if c, ok := chosen["filemap_fault"]; ok && (c.mech == TPBTF || c.mech == Tracepoint) {
		t.Engine.InferFaultRetry = true // no VM_FAULT_RETRY to read (engine.retryImplied)
	}
	if !opts.All && !slices.Contains(t.Engine.Unavailable, "cache.lookups") {
		// The hook exists but is left out (above); where it has no
		// mechanism (5.10) Unavailable says so already.
		t.Engine.Unavailable = append(t.Engine.Unavailable, "cache.lookups (--all)")
	}
	return t, nil
}

// hasKfunc says whether the kernel's BTF has the function name (a kfunc
// such as bpf_rdonly_cast, 6.2+).
func hasKfunc(kspec *btf.Spec, name string) bool {
	var fn *btf.Func
	return kspec.TypeByName(name, &fn) == nil
}

// loadChosen configures spec for the chosen hooks (dropping every other
// program) and loads it.
func loadChosen(spec *ebpf.CollectionSpec, chosen map[string]candidate, opts Options, cache *btf.Cache) (*ebpf.Collection, error) {
	keep := map[string]bool{}
	var sysMask uint64
	for _, c := range chosen {
		for _, a := range c.attach {
			keep[a.prog] = true
		}
		sysMask |= c.sysMask
	}
	for name := range spec.Programs {
		if !keep[name] {
			delete(spec.Programs, name)
		}
	}
	if err := configure(spec, opts, sysMask); err != nil {
		return nil, err
	}
	_, filemapFault := chosen["filemap_fault"]
	if err := spec.Variables["fault_filemap_hooked"].Set(filemapFault); err != nil {
		return nil, fmt.Errorf("setting fault_filemap_hooked: %w", err)
	}
	if err := spec.Variables["map_call_hooked"].Set(mapCallHooked(chosen)); err != nil {
		return nil, fmt.Errorf("setting map_call_hooked: %w", err)
	}
	for _, name := range opts.rejectProgs {
		if p := spec.Programs[name]; p != nil {
			// Tests: a program any verifier refuses (R2 read before any write).
			p.Instructions = asm.Instructions{asm.Mov.Reg(asm.R0, asm.R2), asm.Return()}
		}
	}
	for _, name := range opts.noopProgs {
		if p := spec.Programs[name]; p != nil {
			p.Instructions = asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
		}
	}
	return loadCollection(spec, cache, opts.Stop) // load.go: programs in parallel
}

// dropRejected makes none every optional hook with a program the verifier
// refused (pe), with the verifier's reason in its status, and reports
// whether it dropped any and no required hook's program was refused (else
// the run cannot go on). A program refused for another reason (no memory,
// a missing map) drops nothing.
func dropRejected(chosen map[string]candidate, st []HookStatus, pe *progErrors) bool {
	required := map[string]bool{}
	for _, h := range Hooks() {
		required[h.Name] = h.Loses == ""
	}
	drop := map[string]string{} // hook -> why
	for prog, err := range pe.errs {
		var ve *ebpf.VerifierError
		if !errors.As(err, &ve) {
			return false
		}
		owners := 0
		for hook, c := range chosen {
			for _, a := range c.attach {
				if a.prog == prog {
					if required[hook] {
						return false
					}
					drop[hook] = fmt.Sprintf("the verifier refused %s: %s", prog, verifierSummary(ve))
					owners++
				}
			}
		}
		if owners == 0 {
			return false
		}
	}
	for hook, why := range drop {
		delete(chosen, hook)
		for i := range st {
			if st[i].Hook == hook {
				st[i].Rejected = append(st[i].Rejected, fmt.Sprintf("%s: %s", st[i].Mechanism, why))
				st[i].Mechanism, st[i].Targets, st[i].Variant = None, nil, ""
			}
		}
	}
	return len(drop) > 0
}

func rejections(st []HookStatus, hook string) []string {
	for _, s := range st {
		if s.Hook == hook {
			return s.Rejected
		}
	}
	return nil
}

func verifierSummary(ve *ebpf.VerifierError) string {
	if os.Getenv("IOPATH_VERBOSE") != "" {
		return fmt.Sprintf("%+v", ve)
	}
	for i := len(ve.Log) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(ve.Log[i]); l != "" && !strings.HasPrefix(l, "processed ") {
			return l
		}
	}
	return ve.Error()
}

// configure sets the object's variables and map sizes before load, through
// the specs bpf2go generated (a renamed or removed C variable or map is a
// compile error or an Assign error here, never a silent no-op).
func configure(spec *ebpf.CollectionSpec, opts Options, sysMask uint64) error {
	var vars bpf.IopathVariableSpecs
	var maps bpf.IopathMapSpecs
	if err := spec.Assign(&vars); err != nil {
		return fmt.Errorf("BPF object without iopath's variables (stale generated files?): %w", err)
	}
	if err := spec.Assign(&maps); err != nil {
		return fmt.Errorf("BPF object without iopath's maps (stale generated files?): %w", err)
	}
	b := func(x bool) uint8 {
		if x {
			return 1
		}
		return 0
	}
	type set struct {
		v   *ebpf.VariableSpec
		val any
	}
	flushSeq, err := kernelRqfFlushSeq() // rqflags.go
	if err != nil {
		return err
	}
	sets := []set{{vars.SelfTgid, uint32(os.Getpid())}, {vars.EmitAll, b(opts.All)}, {vars.TrackDirty, b(!opts.NoWriteback)},
		{vars.RawSysMask, sysMask}, {vars.RqfFlushSeqBit, flushSeq}, {vars.AggOn, b(opts.Agg || opts.AggOnly)},
		{vars.AggOnly, b(opts.AggOnly)}, {vars.TraceAll, b(opts.AllProcesses)}}
	if opts.Comm != "" {
		var c [16]byte
		copy(c[:], opts.Comm)
		lo, hi, mlo, mhi := commWords(opts.Comm)
		sets = append(sets, set{vars.FilterComm, uint8(1)}, set{vars.TargetComm, c},
			set{vars.TargetCommLo, lo}, set{vars.TargetCommHi, hi}, set{vars.TargetCommMaskLo, mlo}, set{vars.TargetCommMaskHi, mhi})
	}
	rb := opts.RingBufBytes
	if rb == 0 {
		rb = 8 << 20
	}
	if err := CheckRingBufBytes(rb); err != nil {
		return err
	}
	maps.Events.MaxEntries = uint32(rb)
	if opts.MaxDirtyPages > 0 {
		maps.DirtyPages.MaxEntries = uint32(opts.MaxDirtyPages)
	}
	// IOPATH_HIT_STATS_ENTRIES shrinks the per-file hit map (env.go).
	if n, err := hitStatsEntries(); err != nil {
		return err
	} else if n > 0 {
		maps.HitStats.MaxEntries = n
	}
	// Wake the reader once 1 MiB, or a quarter of a small ring, is queued
	// (it also polls every 100 ms): a fixed size never woke it for a ring
	// of that size or less. 1 MiB rather than 256 KiB: each wakeup costs a
	// cross-CPU interrupt and a burst of the Go runtime's sysmon polling;
	// measured on 4 KiB cold reads, 2.45-3.05 -> 2.29 µs of iopath's CPU
	// per record. IOPATH_WAKEUP_BYTES overrides it (benchmarks).
	wake := uint64(1 << 20)
	if v := os.Getenv("IOPATH_WAKEUP_BYTES"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("IOPATH_WAKEUP_BYTES=%q is not a positive number of bytes", v)
		}
		wake = n
	}
	if q := uint64(rb) / 4; q < wake {
		wake = q
	}
	sets = append(sets, set{vars.WakeupBytes, wake})
	for _, x := range sets {
		if err := x.v.Set(x.val); err != nil {
			return fmt.Errorf("setting BPF variable %s: %w", x.v.Name, err)
		}
	}
	return nil
}

// commWords returns comm (at most 15 bytes) as the two little-endian words
// of a 16-byte task comm, and masks covering its bytes and the NUL after
// them (bpf/helpers.h, comm_matches: a comm matches when those bytes are
// equal, whatever follows the NUL).
func commWords(comm string) (lo, hi, maskLo, maskHi uint64) {
	var c, m [16]byte
	copy(c[:], comm)
	for i := 0; i <= len(comm) && i < 16; i++ {
		m[i] = 0xff
	}
	le := binary.LittleEndian
	return le.Uint64(c[:8]), le.Uint64(c[8:]), le.Uint64(m[:8]), le.Uint64(m[8:])
}

// attachError says why hook's attachment to target by mechanism mech
// failed. E2BIG is the kernel's bound on the BPF programs one attach point
// takes (a tracepoint's perf event: BPF_TRACE_MAX_PROGS, 64; an
// fentry/fexit trampoline: BPF_MAX_TRAMP_LINKS, 38 on x86-64), all held by
// other tools: not a stale verdict of the probe cache, which stays.
func attachError(pc *probeCache, hook string, mech Mechanism, target string, err error) error {
	err = fmt.Errorf("attaching %s (%s %s): %w", hook, mech, target, err)
	if errors.Is(err, unix.E2BIG) {
		return fmt.Errorf("%w: the kernel takes only so many BPF programs on one hook (64 on a tracepoint, 38 on a function) and other BPF tools hold them all there; "+
			"end some (other iopath runs: `pgrep -a iopath`) and run again", err)
	}
	return pc.suspect(err)
}

func attach(a attachment, prog *ebpf.Program) ([]io.Closer, error) {
	if prog == nil {
		return nil, fmt.Errorf("program %s was not loaded", a.prog)
	}
	if a.kind == akPerfEvent {
		return attachPerf(a.target, prog)
	}
	l, err := attachOne(a, prog)
	if err != nil {
		return nil, err
	}
	return []io.Closer{l}, nil
}

func attachOne(a attachment, prog *ebpf.Program) (link.Link, error) {
	switch a.kind {
	case akFentry, akFexit, akTPBTF:
		return link.AttachTracing(link.TracingOptions{Program: prog})
	case akKprobe:
		return link.Kprobe(a.target, prog, nil)
	case akKretprobe:
		return link.Kretprobe(a.target, prog, nil)
	case akTracepoint:
		group, name, _ := strings.Cut(a.target, "/")
		return link.Tracepoint(group, name, prog, nil)
	}
	return nil, fmt.Errorf("unknown attach kind %d", a.kind)
}

// ErrNoProcess: AddPid's pid names no process (any more).
var ErrNoProcess = errors.New("no process with pid")

// AddPid starts tracing a process (all its threads, and children it forks
// from now on). It fails if the process does not exist.
func (t *Tracer) AddPid(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("pid %d is not a process id", pid)
	}
	if err := unix.Kill(pid, 0); err == unix.ESRCH {
		return fmt.Errorf("%w %d: check the pid with `ps -p %d`", ErrNoProcess, pid, pid)
	}
	tgid := Tgid(pid)
	if err := t.targets.Put(uint32(tgid), uint8(1)); err != nil {
		return err
	}
	// Threads of this process may be marked untraced in tid_slot (they
	// made a call before it was added): a new generation voids the marks.
	t.targetsGen++
	return t.coll.Variables[bpf.IopathVarTargetsGen].Set(t.targetsGen)
}

// waitDeadline is how long Run waits for records when the ring is empty:
// 100 ms, or until wake (what Idle asked for, e.g. the next interval
// summary of trace --interval 20ms) if that is sooner.
func waitDeadline(now, wake time.Time) time.Time {
	d := now.Add(100 * time.Millisecond)
	if !wake.IsZero() && wake.Before(d) {
		return wake
	}
	return d
}

// Run reads events until ctx is done, then drains what the kernel has
// already written and waits up to settle for bios still in flight.
func (t *Tracer) Run(ctx context.Context, settle time.Duration) error {
	var rec ringbuf.Record
	done := ctx.Done()
	draining := false
	var drainUntil, deadline time.Time
	ready := func() bool { return t.rd.AvailableBytes() > 0 }
	if t.rw != nil {
		t.rd.SetDeadline(time.Unix(1, 0)) // never block in the reader: t.rw waits
	}
	timedOut := false
	stopSpares, sparesDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sparesDone)
		t.watchSpares(stopSpares, t.Notes) // spare.go
	}()
	defer func() {
		close(stopSpares)
		<-sparesDone
	}()
	for {
		// The deadline only matters when ReadInto has to wait, which it
		// does only once the ring is empty: with records left (Remaining,
		// committed or being written) it returns the next one at once. So
		// the clock reads and SetDeadline's lock are paid per wait, not
		// per record.
		if rec.Remaining == 0 {
			var wake time.Time
			if t.Idle != nil {
				wake = t.Idle()
			}
			if !draining {
				select {
				case <-done:
					draining = true
					drainUntil = time.Now().Add(settle)
				default:
				}
			}
			deadline = waitDeadline(time.Now(), wake)
			if draining {
				if time.Now().After(drainUntil) {
					deadline = time.Now()
				} else if t.joined() {
					deadline = time.Now()
				}
			}
			if t.rw != nil {
				timedOut = t.rw.wait(deadline, ready)
			} else {
				t.rd.SetDeadline(deadline)
			}
		}
		err := t.rd.ReadInto(&rec)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ringbuf.ErrFlushed) {
				// The ring is empty: wait with a fresh deadline next
				// time (a last Remaining > 0 can be stale when the
				// records left were discarded ones).
				rec.Remaining = 0
				if t.rw != nil && !timedOut {
					continue // drained after a wakeup: wait again
				}
				t.Engine.Tick(monotonicNow())
				if draining && !time.Now().Before(deadline) && (time.Now().After(drainUntil) || t.joined()) {
					t.endUnseen() // inflight.go: requests held beyond their disk's count
					t.Engine.Flush()
					return nil
				}
				continue
			}
			if errors.Is(err, ringbuf.ErrClosed) {
				return nil
			}
			return fmt.Errorf("reading ring buffer: %w", err)
		}
		t.dispatch(rec.RawSample)
	}
}

// joined reports whether the engine holds no call waiting for its record or
// bios and no request waiting for its completion.
func (t *Tracer) joined() bool {
	calls, requests := t.Engine.Pending()
	return calls == 0 && requests == 0
}

// dispatch decodes one ring-buffer record in place (no copy, no allocation
// for the common records) and feeds the engine.
func (t *Tracer) dispatch(raw []byte) {
	if debugEvents != nil {
		logEvent(raw)
	}
	if err := t.dec.Dispatch(t.Engine, raw); err != nil && os.Getenv("IOPATH_VERBOSE") != "" {
		fmt.Fprintln(os.Stderr, "iopath:", err)
	}
}

func monotonicNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// MonotonicNow returns CLOCK_MONOTONIC in ns, the clock of every *_ns timestamp.
func MonotonicNow() uint64 { return monotonicNow() }

// counterNames names every counter of bpf/events.h's enum counter (the
// summary's map_evictions, truncations and diagnostics keys). Sized by
// CNT_MAX: a counter added in C without a name here fails
// TestCounterNames.
var counterNames = [bpf.IopathCounterCNT_MAX]string{
	bpf.IopathCounterCNT_RINGBUF_LOST: "ringbuf_lost", bpf.IopathCounterCNT_OPS_FULL: "hit_stats",
	bpf.IopathCounterCNT_BIO_OWNER_FULL: "bio_owners", bpf.IopathCounterCNT_DIRTY_FULL: "dirty_pages",
	bpf.IopathCounterCNT_INFLIGHT_FULL: "inflight", bpf.IopathCounterCNT_RQ_CHAIN_TRUNC: "rq_bio_chain",
	bpf.IopathCounterCNT_RQ_OWN_TRUNC: "rq_owned_bios", bpf.IopathCounterCNT_RANGES_TRUNC: "page_ranges",
	bpf.IopathCounterCNT_BVEC_TRUNC: "bio_vecs", bpf.IopathCounterCNT_WB_MATCH_TRUNC: "wb_matches",
	bpf.IopathCounterCNT_TASK_OPS_FULL: "task_ops", bpf.IopathCounterCNT_WALK_FOLIOS: "walk_folios",
	bpf.IopathCounterCNT_WALK_MATCHED: "walk_matched", bpf.IopathCounterCNT_WALK_BIOS: "walk_bios",
	bpf.IopathCounterCNT_TARGETS_FULL: "targets", bpf.IopathCounterCNT_HIT_OTHER_FULL: "hit_other",
	bpf.IopathCounterCNT_FAULT_UNENDED: "faults_unended", bpf.IopathCounterCNT_FAULT_STATS_FULL: "fault_stats",
	bpf.IopathCounterCNT_FLUSH_FULL:     "flush_issued",
	bpf.IopathCounterCNT_AIO_IOCB_TRUNC: "aio_iocbs", bpf.IopathCounterCNT_AIO_REAP_TRUNC: "aio_events",
	bpf.IopathCounterCNT_URING_FULL: "uring_reqs", bpf.IopathCounterCNT_EXEC_MOVING_FULL: "exec_moving",
	bpf.IopathCounterCNT_OPS_NOMEM: "hit_stats_nomem", bpf.IopathCounterCNT_FAULT_VMA_BUSY: "faults_vma_busy",
	bpf.IopathCounterCNT_FAULT_VMA_RECOVERED: "faults_vma_recovered",
	bpf.IopathCounterCNT_SPARE_SYS_ENTER:     "spare_sys_enter", bpf.IopathCounterCNT_SPARE_SYS_EXIT: "spare_sys_exit",
	bpf.IopathCounterCNT_SPARE_BIO_QUEUE: "spare_bio_queue", bpf.IopathCounterCNT_SPARE_RQ_ISSUE: "spare_rq_issue",
	bpf.IopathCounterCNT_SPARE_AIO_DIO: "spare_aio_dio", bpf.IopathCounterCNT_SPARE_URING_DIO: "spare_uring_dio",
	bpf.IopathCounterCNT_SPARE_URING_FILE: "spare_uring_file", bpf.IopathCounterCNT_SPARE_FLUSH_ISSUE: "spare_flush_issue",
}

// Counters sums the kernel's per-CPU loss counters by name.
func (t *Tracer) Counters() map[string]uint64 {
	out := map[string]uint64{}
	for idx, name := range counterNames {
		out[name] = t.counter1(bpf.IopathCounter(idx))
	}
	return out
}

// Summary returns the end-of-trace summary: the engine's totals plus the
// kernel's aggregated cache hits, loss counters and the attach report.
func (t *Tracer) Summary() *record.Summary {
	t.addTaskHits()
	var k bpf.IopathStatKey
	var per []bpf.IopathStatVal
	it := t.hits.Iterate()
	for it.Next(&k, &per) {
		t.Engine.AddHits(k, sumHits(per))
	}
	t.addHitsNotItemized()
	t.addFaultStats()
	s := t.Engine.Summary()
	s.DurationNs = uint64(time.Since(t.started))
	c := t.Counters()
	s.LostEvents = c["ringbuf_lost"]
	s.MarkPartialLost()
	for _, m := range []string{"hit_stats", "hit_stats_nomem", "hit_other", "bio_owners", "dirty_pages", "inflight", "task_ops", "targets", "fault_stats", "uring_reqs", "exec_moving"} {
		s.MapEvictions[m] = c[m]
	}
	for _, m := range []string{"rq_bio_chain", "rq_owned_bios", "page_ranges", "bio_vecs", "wb_matches", "aio_iocbs", "aio_events"} {
		s.Truncations[m] = c[m]
	}
	for _, h := range t.Hooks {
		s.Attach[h.Hook] = string(h.Mechanism)
		if h.Variant == "attached with --all only" {
			s.Attach[h.Hook] = "off (--all)"
		}
	}
	s.MissedRuns = t.MissedRuns()
	if c["dirty_pages"] > 0 {
		s.MarkPartialWriteback()
	}
	// Pending dirty pages the kernel says are clean: written without iopath
	// seeing the bio (a missed program run, or the dirty_pages map was
	// full). cachestat(2), Linux 6.5+. A file is asked about as
	// --wait-writeback asks (tracer/dirty.go: by file handle, so a file
	// renamed since is found); one deleted since had its pages dropped
	// unwritten: they are no longer pending either (dirty_pages_dropped_unseen;
	// they counted as pending after an overflow, 4096 of 4096).
	mounts, refs := mountPoints(), t.dirtied.byInode()
	var dropped uint64
	for _, f := range t.Engine.PendingFiles() {
		dev := kernel.Dev(f.Dev)
		ref := refs[dirtiedFile{dev: dev, ino: f.Ino}]
		if ref == nil && f.Path != "" && !strings.HasPrefix(f.Path, "...") {
			ref = &fileRef{dev: dev, ino: f.Ino, path: f.Path} // by the engine's name
		}
		if ref == nil {
			continue
		}
		switch n, st := ref.dirtyPages(mounts); {
		case st == fileDeleted:
			dropped += t.Engine.ForgetPending(f.Dev, f.Ino)
		case st == fileCounted && n == 0:
			s.DirtyUnseen += t.Engine.ForgetPending(f.Dev, f.Ino)
		}
	}
	s.DirtyPending = t.Engine.DirtyPending()
	_, requests := t.Engine.Pending()
	s.Diagnostics = map[string]uint64{"walk_bios": c["walk_bios"], "walk_folios": c["walk_folios"], "walk_matched": c["walk_matched"],
		// Records whose omitted path was never received (its record was lost).
		"paths_missing": t.dec.MissingPaths,
		// Faults whose end was never seen: records with end_unseen when
		// closed at the thread's next fault or exit, none when a system
		// call's start found them open (bpf/fault.c fault_unended).
		"faults_unended": c["faults_unended"],
		// User faults, on any mapping (anonymous too), whose mapping
		// bpf_find_vma could not look up (another thread held the mmap
		// lock); of those, the ones opened later at mm_filemap_fault (tp_btf)
		// from the page cache's inode. The rest read no file through
		// filemap_fault (render.vmaBusyText says what that means).
		"faults_vma_busy": c["faults_vma_busy"], "faults_vma_recovered": c["faults_vma_recovered"],
		// Events the spare programs handled in place of a skipped
		// primary run (spare.go), per spared program.
		"spare_sys_enter": c["spare_sys_enter"], "spare_sys_exit": c["spare_sys_exit"], "spare_bio_queue": c["spare_bio_queue"],
		"spare_rq_issue": c["spare_rq_issue"], "spare_aio_dio": c["spare_aio_dio"], "spare_uring_dio": c["spare_uring_dio"],
		"spare_uring_file": c["spare_uring_file"], "spare_flush_issue": c["spare_flush_issue"],
		// Requests held at the end (engine/endunseen.go): completed unseen
		// beyond their disk's own count of requests in flight, and the
		// ones still held after that (in flight, for all iopath can tell).
		"requests_unseen_at_end": t.Engine.Counters().RequestsUnseenAtEnd, "requests_in_flight_at_end": uint64(requests),
		// Dirty pages not seen written whose file was deleted since: dropped.
		"dirty_pages_dropped_unseen": dropped}
	return s
}

// addTaskHits reads the hits still summed in per-thread state (threads
// alive at the end) into the engine. Slots are handed out in order from 1
// (bpf/op.h, op_slot; exited threads' slots are reused first), so slots
// past next_slot were never used: a short trace reads a few slots instead
// of the array's 8192 (two system calls each with an iterator: ~16 k calls,
// 20-30 ms at every exit). The compat build numbers slots per CPU: it reads
// them all.
func (t *Tracer) addTaskHits() {
	m := t.coll.Maps[bpf.IopathMapTaskOps]
	last := m.MaxEntries() - 1
	var used uint64
	if v := t.coll.Variables[bpf.IopathVarNextSlot]; len(t.Compat) == 0 && v != nil && v.Get(&used) == nil && used < uint64(last) {
		last = uint32(used)
	}
	var op bpf.IopathOp
	for slot := uint32(1); slot <= last; slot++ {
		if m.Lookup(slot, &op) != nil || op.AggCalls == 0 {
			continue
		}
		val := bpf.IopathStatVal{Calls: op.AggCalls, BytesRequested: op.AggBytesRequested,
			BytesReturned: op.AggBytesReturned, Pages: op.AggPages, Name: op.AggName, Comm: op.Comm}
		if val.Comm[0] == 0 {
			val.Comm = taskComm(op.Pid, op.Tid) // no call of it was streamed
		}
		t.Engine.AddHits(bpf.IopathStatKey{Ino: op.AggIno, Pid: op.Pid, Dev: op.AggDev, Write: op.AggWrite, Gen: op.AggGen}, val)
	}
}

// addHitsNotItemized reads the hits the kernel could not count per file
// (hit_stats was full) into the engine: per process from hit_other, and
// those of no process from hit_unowned.
func (t *Tracer) addHitsNotItemized() {
	var k bpf.IopathOtherKey
	var per []bpf.IopathStatVal
	it := t.coll.Maps[bpf.IopathMapHitOther].Iterate()
	for it.Next(&k, &per) {
		t.Engine.AddHitsNotItemized(k.Pid, k.Write != 0, sumHits(per))
	}
	for write := uint32(0); write < 2; write++ {
		if t.coll.Maps[bpf.IopathMapHitUnowned].Lookup(write, &per) == nil {
			t.Engine.AddHitsNotItemized(0, write != 0, sumHits(per))
		}
	}
}

// sumHits adds up the per-CPU values of one hit aggregate.
func sumHits(per []bpf.IopathStatVal) bpf.IopathStatVal {
	var sum bpf.IopathStatVal
	for _, v := range per {
		sum.Calls += v.Calls
		sum.BytesRequested += v.BytesRequested
		sum.BytesReturned += v.BytesReturned
		sum.Pages += v.Pages
		if sum.Comm[0] == 0 {
			sum.Comm = v.Comm
		}
		if sum.Name[0] == 0 {
			sum.Name = v.Name
		}
	}
	return sum
}

// Close detaches every link and unloads every program and map. Safe to call twice.
func (t *Tracer) Close() error {
	if t == nil {
		return nil
	}
	// Detaching waits for an RCU grace period per link (tens of ms each);
	// closing them concurrently lets those waits overlap.
	t.spares.mu.Lock() // no spare attaching meanwhile (spare.go)
	defer t.spares.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range t.links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Close()
		}()
	}
	wg.Wait()
	t.links = nil
	t.rw.close()
	t.rw = nil
	if t.rd != nil {
		t.rd.Close()
		t.rd = nil
	}
	if t.coll != nil {
		t.coll.Close()
		t.coll = nil
	}
	return nil
}

// debugEvents, when IOPATH_DEBUG_EVENTS names a file, receives one line per
// raw event (type and join keys): for diagnosing the joins.
var debugEvents *os.File

func init() {
	if p := os.Getenv("IOPATH_DEBUG_EVENTS"); p != "" {
		debugEvents, _ = os.Create(p)
	}
}

func logEvent(raw []byte) {
	if len(raw) < 4 {
		return
	}
	switch bpf.IopathEvType(*(*uint32)(unsafe.Pointer(&raw[0]))) {
	case bpf.IopathEvTypeEV_WB_BIO:
		ev := (*bpf.IopathWbBioEv)(unsafe.Pointer(&raw[0]))
		fmt.Fprintf(debugEvents, "wbbio bio=%x part=%d n=%d pages=%d ts=%d", ev.Bio, ev.Part, ev.NrMatch, ev.Pages, ev.Ts)
		for i := 0; i < min(int(ev.NrMatch), len(ev.Match)); i++ {
			fmt.Fprintf(debugEvents, " [%x %d+%d/%d]", ev.Match[i].OpId, ev.Match[i].Index, ev.Match[i].Nr, ev.Match[i].BioPages)
		}
		fmt.Fprintln(debugEvents)
	case bpf.IopathEvTypeEV_RQ_ISSUE:
		var ev bpf.IopathRqIssueEv // cut after its owned bios: copy, do not cast
		fill(bytesOf(&ev), raw)
		fmt.Fprintf(debugEvents, "issue rq=%x ts=%d bytes=%d nbios=%d own=%d", ev.Rq, ev.Ts, ev.Bytes, ev.NrBios, ev.NrOwn)
		for i := 0; i < min(int(ev.NrOwn), len(ev.Own)); i++ {
			fmt.Fprintf(debugEvents, " [%x op=%x f=%d b=%d]", ev.Own[i].Bio, ev.Own[i].OpId, ev.Own[i].Flags, ev.Own[i].Bytes)
		}
		fmt.Fprintln(debugEvents)
	case bpf.IopathEvTypeEV_RQ_COMPLETE, bpf.IopathEvTypeEV_RQ_REQUEUE:
		ev := (*bpf.IopathRqDoneEv)(unsafe.Pointer(&raw[0]))
		fmt.Fprintf(debugEvents, "done%d rq=%x ts=%d bytes=%d err=%d\n", ev.Type, ev.Rq, ev.Ts, ev.Bytes, ev.Error)
	case bpf.IopathEvTypeEV_BIO_SPLIT:
		ev := (*bpf.IopathBioSplitEv)(unsafe.Pointer(&raw[0]))
		fmt.Fprintf(debugEvents, "split split=%x parent=%x ts=%d\n", ev.Split, ev.Parent, ev.Ts)
	case bpf.IopathEvTypeEV_FLUSH_DONE:
		var ev bpf.IopathFlushDoneEv
		fill(bytesOf(&ev), raw)
		fmt.Fprintf(debugEvents, "flushdone bio=%x op=%x own=%d queue=%d done=%d flush_rq=%x issue=%d complete=%d bytes=%d\n",
			ev.Bio, ev.OpId, ev.OwnFlags, ev.QueueNs, ev.DoneNs, ev.FlushRq, ev.FlushIssueNs, ev.FlushDoneNs, ev.Bytes)
	}
}
