package tracer

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// specRead is readSpec's result.
type specRead struct {
	spec   *ebpf.CollectionSpec
	compat []string
	err    error
}

// readSpec parses the embedded BPF object on a goroutine of its own (~20 ms
// of CPU for its ~100 programs), and scans the kernel's raw BTF for
// RQF_FLUSH_SEQ (a few ms, cached for configure): New parses the kernel's
// BTF and probes the hooks meanwhile, on another CPU when there is one.
// loadSpec (compat.go) picks the compat build on kernels before 5.17
// (kernels/issue 16).
func readSpec() <-chan specRead {
	c := make(chan specRead, 1)
	go func() {
		spec, compat, err := loadSpec()
		_, _ = kernelRqfFlushSeq() // its error, if any, is configure's
		c <- specRead{spec, compat, err}
	}()
	return c
}

// loadCollection creates spec's maps, then verifies and loads its programs
// on up to GOMAXPROCS goroutines at once, largest first: the kernel's
// verifier is most of iopath's startup (42 programs, ~0.6 s of CPU on a
// 6.18 kernel; raw_sys_exit alone ~0.25 s; TestVerificationBudget), and cilium/ebpf's
// NewCollection runs it for one program after the other. Each program is
// loaded as a collection of its own whose maps are the ones created first
// (MapReplacements), so every program shares one set of maps, as with a
// single NewCollection. A privileged caller's loads do not serialize in the
// kernel (bpf_verifier_lock is taken for unprivileged loads only). When stop
// is closed (a signal came), no further program starts loading and
// ErrStopped is returned once those being verified are done (a verifier run
// cannot be interrupted: under load ~1 s for raw_sys_exit, and a SIGTERM
// 0.5 s into the load ended iopath 12 s later). On error nothing stays
// loaded.
func loadCollection(spec *ebpf.CollectionSpec, cache *btf.Cache, stop <-chan struct{}) (_ *ebpf.Collection, err error) {
	maps, err := ebpf.NewCollectionWithOptions(&ebpf.CollectionSpec{Maps: spec.Maps, Variables: spec.Variables,
		Types: spec.Types, ByteOrder: spec.ByteOrder}, ebpf.CollectionOptions{Cache: cache})
	if err != nil {
		return nil, err
	}
	coll := &ebpf.Collection{Maps: maps.Maps, Variables: maps.Variables, Programs: map[string]*ebpf.Program{}}
	defer func() {
		if err != nil {
			coll.Close()
		}
	}()
	names := make([]string, 0, len(spec.Programs))
	for name, p := range spec.Programs {
		if p.Type != ebpf.UnspecifiedProgram {
			names = append(names, name)
		}
	}
	// Longest first: the last program to start is a short one, so the
	// goroutines finish close together.
	slices.SortFunc(names, func(a, b string) int {
		if d := len(spec.Programs[b].Instructions) - len(spec.Programs[a].Instructions); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	type loaded struct {
		name string
		prog *ebpf.Program
		took time.Duration
		cpu  time.Duration // this thread's CPU time (with IOPATH_LOAD_TIMES)
		err  error
	}
	jobs := make(chan string)
	results := make(chan loaded, len(names))
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if loadTimes {
				runtime.LockOSThread() // threadCPU: the verifier runs on the loading thread
			}
			for name := range jobs {
				t0, c0 := time.Now(), threadCPU()
				p, err := loadProgram(spec, name, coll.Maps, cache)
				results <- loaded{name, p, time.Since(t0), threadCPU() - c0, err}
			}
		}()
	}
	stopped := false
feed:
	for _, name := range names {
		select {
		case jobs <- name:
		case <-stop:
			stopped = true
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(results)
	errs := map[string]error{}
	for r := range results {
		if r.err != nil {
			errs[r.name] = r.err
			continue
		}
		coll.Programs[r.name] = r.prog
		if loadTimes {
			vi, _ := programVerified(r.prog)
			fmt.Fprintf(os.Stderr, "iopath: loaded %s in %.1f ms, %.1f ms of CPU (%d instructions, %d verified)\n",
				r.name, ms(r.took), ms(r.cpu), len(spec.Programs[r.name].Instructions), vi)
		}
	}
	if stopped {
		return nil, ErrStopped
	}
	if len(errs) > 0 {
		return nil, &progErrors{errs: errs, first: firstFailed(names, errs)}
	}
	return coll, nil
}

// ErrStopped: Options.Stop was closed while the programs loaded.
var ErrStopped = errors.New("stopped while loading the BPF programs")

// progErrors is loadCollection's error when programs failed to load: each
// program's error by its name. It reads (and unwraps) as the first one in
// load order, as NewCollection's single error would.
type progErrors struct {
	errs  map[string]error
	first string
}

func (e *progErrors) Error() string { return e.errs[e.first].Error() }
func (e *progErrors) Unwrap() error { return e.errs[e.first] }

func firstFailed(names []string, errs map[string]error) string {
	for _, n := range names {
		if errs[n] != nil {
			return n
		}
	}
	return ""
}

// loadProgram loads one program of spec whose maps are already created.
func loadProgram(spec *ebpf.CollectionSpec, name string, maps map[string]*ebpf.Map, cache *btf.Cache) (*ebpf.Program, error) {
	ps := spec.Programs[name]
	own := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{name: ps}, ByteOrder: spec.ByteOrder}
	repl := map[string]*ebpf.Map{}
	for _, ins := range ps.Instructions {
		ref := ins.Reference()
		if !ins.IsLoadFromMap() || ref == "" {
			continue
		}
		m, ok := maps[ref]
		if !ok {
			return nil, fmt.Errorf("program %s: missing map %s", name, ref)
		}
		own.Maps[ref], repl[ref] = spec.Maps[ref], m
	}
	opts := ebpf.CollectionOptions{Cache: cache, MapReplacements: repl}
	logged := verifierLogOf == name
	if logged {
		opts.Programs = ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction | ebpf.LogLevelStats, LogSizeStart: 1 << 30}
	}
	c, err := ebpf.NewCollectionWithOptions(own, opts)
	if err != nil {
		return nil, err
	}
	if logged {
		writeVerifierLog(name, c.Programs[name].VerifierLog)
	}
	for _, m := range c.Maps {
		m.Close() // clones of the shared maps' fds
	}
	return c.Programs[name], nil
}

// verifierLogOf (IOPATH_VERIFIER_LOG=PROGRAM, a development aid for
// start-up work, docs/benchmarks.md) names a program whose whole verifier
// log (every instruction processed, with the source line it comes from) is
// written to a file: where a program's verification cost goes.
var verifierLogOf = os.Getenv("IOPATH_VERIFIER_LOG")

func writeVerifierLog(name, log string) {
	f, err := os.CreateTemp("", "iopath-verifier-"+name+"-*.log")
	if err == nil {
		_, err = f.WriteString(log)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "iopath: verifier log of %s not written: %v\n", name, err)
		return
	}
	fmt.Fprintf(os.Stderr, "iopath: verifier log of %s: %s (%d bytes)\n", name, f.Name(), len(log))
}

// programVerified is the number of instructions the verifier processed.
func programVerified(p *ebpf.Program) (uint32, bool) {
	info, err := p.Info()
	if err != nil {
		return 0, false
	}
	return info.VerifiedInstructions()
}

// loadTimes (IOPATH_LOAD_TIMES=1, a development aid for startup work,
// docs/benchmarks.md) prints each program's load time and the phases of
// New on stderr.
var loadTimes = os.Getenv("IOPATH_LOAD_TIMES") != ""

// phases prints how long each phase of New took, with IOPATH_LOAD_TIMES.
type phases struct{ last time.Time }

func newPhases() *phases { return &phases{last: time.Now()} }

func (p *phases) done(what string) {
	if !loadTimes {
		return
	}
	now := time.Now()
	fmt.Fprintf(os.Stderr, "iopath: %s: %.1f ms\n", what, ms(now.Sub(p.last)))
	p.last = now
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// threadCPU is the calling thread's CPU time, with IOPATH_LOAD_TIMES (0
// without).
func threadCPU() time.Duration {
	if !loadTimes {
		return 0
	}
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}
